"""`profilekit import`: launches (command lines and scripts) into layer files, or a clear refusal (exit 2)."""

from __future__ import annotations

import contextlib
import datetime
import shutil
from pathlib import Path

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from profilekit.errors import UsageError
from profilekit.importing.launch import import_launch
from profilekit.importing.shellwords import split_commands
from profilekit.rules.options import option_findings
from profilekit.session import Session
from profilekit.vllm.catalogue import load_catalogue
from profilekit.vllm.config_yaml import YamlError, config_args, read_yaml
from tests.conftest import MakeRepo, Run

LAUNCHES = Path(__file__).parent / "data" / "launches"


@pytest.fixture
def repo(make_repo: MakeRepo) -> Path:
    return make_repo({})


def _layer(root: Path, name: str) -> str:
    return (root / "profiles" / f"{name}.toml").read_text(encoding="utf-8")


def test_a_command_line_becomes_a_layer_a_person_would_write(repo: Path, run: Run) -> None:
    result = run(
        "--repo",
        repo,
        "import",
        "--",
        "CUDA_VISIBLE_DEVICES=0",
        "HF_TOKEN=hf_abcdef",
        "vllm",
        "serve",
        "Qwen/Qwen3-0.6B",
        "--port=8100",
        "-tp",
        "2",
        "--enforce_eager",
        "--no-enable-prefix-caching",
        "--served-model-name",
        "qwen",
        "small",
        "--kv-transfer-config",
        '{"kv_connector":"NixlConnector","kv_role":"kv_both","kv_connector_extra_config":{"backends":["UCX"]}}',
        "--max-model-len",
        "32k",
        "-O3",
        "--middleware",
        "a.B",
        "--middleware",
        "c.D",
    )
    # TP 2 on the one GPU CUDA_VISIBLE_DEVICES lists: written as it runs, and said to be refused (exit 1)
    assert result.code == 1, result
    assert result.err.endswith(
        "the imported launch would not start on vLLM 0.33.0: 1 error above; the layer is written as it runs today: "
        "fix it with `profilekit check qwen3-0.6b`\n"
    )
    assert "error host-gpu-count role serve has CUDA_VISIBLE_DEVICES" in result.err
    assert result.out == "profiles/qwen3-0.6b.toml\n"
    assert result.err.startswith(  # the notes, then what `check` says of the layer
        "note: HF_TOKEN looks like a secret: written as { secret = true }, its value is not written; "
        "set it in the environment that runs the launch script\n"
    )
    assert _layer(repo, "qwen3-0.6b") == (
        "# Imported with `profilekit import` for vLLM 0.33.0.\n"
        "\n"
        "[layer]\n"
        'description = "Imported from a vllm serve command line"\n'
        "\n"
        "[serve]\n"
        'model = "Qwen/Qwen3-0.6B"\n'
        "port = 8100\n"
        "tensor_parallel_size = 2\n"
        "enforce_eager = true\n"
        "enable_prefix_caching = false\n"
        'served_model_name = ["qwen", "small"]\n'
        'max_model_len = "32k"\n'
        'optimization_level = "3"\n'
        'middleware = ["a.B", "c.D"]\n'
        "\n"
        "[serve.kv_transfer_config]\n"
        'kv_connector = "NixlConnector"\n'
        'kv_role = "kv_both"\n'
        "\n"
        "[serve.kv_transfer_config.kv_connector_extra_config]\n"
        'backends = ["UCX"]\n'
        "\n"
        "[env]\n"
        'CUDA_VISIBLE_DEVICES = "0"\n'
        "HF_TOKEN = {secret = true}\n"
    )
    assert "hf_abcdef" not in _layer(repo, "qwen3-0.6b")


def test_dotted_json_keys_merge_into_one_table_and_replace_an_earlier_json_value(repo: Path, run: Run) -> None:
    result = run(
        "--repo",
        repo,
        "import",
        "--name",
        "pd/prefill",
        "--",
        "vllm",
        "serve",
        "m",
        "--kv-transfer-config",
        '{"kv_connector":"NixlConnector","kv_role":"kv_both"}',
        "--kv-transfer-config.kv_connector",
        "NixlConnector",
        "--kv_transfer_config.kv_role=kv_producer",
        "--kv-transfer-config.kv_connector_extra_config.backends+",
        "UCX,LIBFABRIC",
        "-cc.cudagraph_mode=FULL_DECODE_ONLY",
    )
    assert result.code == 0, result
    assert result.out == "profiles/pd/prefill.toml\n"
    assert result.err.startswith(
        "note: --kv-transfer-config is given more than once; the last value wins, as in vLLM\n"
    )
    assert _layer(repo, "pd/prefill").split("[serve]\n", 1)[1] == (
        'model = "m"\n'
        "\n"
        "[serve.kv_transfer_config]\n"
        'kv_connector = "NixlConnector"\n'
        'kv_role = "kv_producer"\n'
        "\n"
        "[serve.kv_transfer_config.kv_connector_extra_config]\n"
        'backends = ["UCX", "LIBFABRIC"]\n'
        "\n"
        "[serve.compilation_config]\n"
        'cudagraph_mode = "FULL_DECODE_ONLY"\n'
    )


def test_a_script_with_exports_prefixes_comments_and_continuations(repo: Path, run: Run, tmp_path: Path) -> None:
    script = tmp_path / "launch.sh"
    script.write_text(
        "#!/usr/bin/env bash\n"
        "set -euo pipefail\n"
        "# the decoder\n"
        "export UCX_NET_DEVICES=all VLLM_LOGGING_LEVEL=DEBUG\n"
        "MY_SECRET=xyz\n"
        "PLAIN=1\n"
        "export MY_SECRET\n"
        "VLLM_NIXL_SIDE_CHANNEL_PORT=5601 exec vllm serve Qwen/Qwen3-0.6B \\\n"
        "  --port 8200 `# not allowed`\n",
        encoding="utf-8",
    )
    result = run("--repo", repo, "import", script.name, cwd=tmp_path)
    assert result.code == 2
    assert result.err == (
        "profilekit: error: cannot import launch.sh: line 9: `...`: command substitution cannot be represented; "
        "write the value\n"
    )
    script.write_text(script.read_text().replace(" `# not allowed`", "  # the port"), encoding="utf-8")
    result = run("--repo", repo, "import", script.name, cwd=tmp_path)
    assert result.code == 0, result
    assert result.err == (
        "note: line 6: PLAIN is a shell variable the launch does not see (not exported); not imported\n"
        "note: MY_SECRET looks like a secret: written as { secret = true }, its value is not written; "
        "set it in the environment that runs the launch script\n"
    )
    assert _layer(repo, "qwen3-0.6b").split("[serve]\n", 1)[1] == (
        'model = "Qwen/Qwen3-0.6B"\n'
        "port = 8200\n"
        "\n"
        "[env]\n"
        'UCX_NET_DEVICES = "all"\n'
        'VLLM_LOGGING_LEVEL = "DEBUG"\n'
        "MY_SECRET = {secret = true}\n"
        'VLLM_NIXL_SIDE_CHANNEL_PORT = "5601"\n'
    )


# every `vllm serve` launch of ../shared/reference/launch-examples.md (tests/data/launches)
IMPORTED = [
    "d1a",
    "d1c",
    "d1d",
    "d2a",
    "d2b",
    "d2c",
    "d2e",
    "d3a-prefill",
    "d3a-decode",
    "d3b-prefill-filled",
    "d3b-decode-filled",
    "d3d-prefill",
    "d3d-decode",
    "d3f",
    "d4a-filled",
    "d4b-filled",
    "d4c-simple",
    "d4c-offloading-cpu",
    "d4c-lmcache",
    "d4d",
    "d4e-filled",
    "d4f",
]
REFUSED = {
    "d2d": (
        "cannot import d2d.sh: line 7: --tool-call-parser-plugin: vLLM 0.33.0 has no option "
        "'--tool-call-parser-plugin'\n  hint: did you mean --tool-parser-plugin?"
    ),
    "d3b-prefill": (
        "cannot import d3b-prefill.sh: line 2: ${IP1}: the script does not set IP1, so its value is only known when "
        "the script runs; write the value"
    ),
    "d4a": (
        "cannot import d4a.sh: line 2: <model>: bash reads a redirection here; write the value in place of a "
        "placeholder such as <model>"
    ),
    # every problem at once, each at its own line (line 2's ${VLLM_PYTHON_HASH_SEED:-123} takes its default)
    "d4e": (
        "cannot import d4e.sh: 2 problems\n"
        "  line 4: $prefill_config_file: the script does not set prefill_config_file, so its value is only known "
        "when the script runs; write the value\n"
        "  line 9: $MODEL: the script does not set MODEL, so its value is only known when the script runs; write "
        "the value"
    ),
}


@pytest.mark.parametrize("name", IMPORTED)
def test_every_launch_example_imports_and_checks_clean(name: str, repo: Path, run: Run) -> None:
    result = run("--repo", repo, "import", "--name", name, f"{name}.sh", cwd=LAUNCHES)
    # D2e (ReplaySSM on the Triton backend) is refused by 0.33.0 on a GPU host, where it picks Model Runner V2:
    # imported as it runs, and said so (exit 1)
    assert result.code == (1 if name == "d2e" else 0), result
    assert result.out == f"profiles/{name}.toml\n"
    session = Session.open(repo=repo, vllm_version=None)
    catalogue = session.catalogue
    assert catalogue is not None
    findings = option_findings(session.stack(name), catalogue)
    assert [f.rule for f in findings if f.is_error] == []


@pytest.mark.parametrize("name", sorted(REFUSED))
def test_launch_examples_that_cannot_be_represented_are_refused(name: str, repo: Path, run: Run) -> None:
    result = run("--repo", repo, "import", f"{name}.sh", cwd=LAUNCHES)
    assert result.code == 2
    assert result.err == f"profilekit: error: {REFUSED[name]}\n"
    assert list((repo / "profiles").iterdir()) == []


def test_the_d2d_launch_imports_for_a_release_that_has_its_option(repo: Path, run: Run) -> None:
    result = run("--repo", repo, "--vllm-version", "0.27.0", "import", "d2d.sh", cwd=LAUNCHES)
    # 0.27.0 has no --tool-call-parser-plugin either: the refusal names the targeted release
    assert result.code == 2
    assert "vLLM 0.27.0 has no option '--tool-call-parser-plugin'" in result.err


def test_a_config_file_is_read_like_vllm_reads_it(repo: Path, run: Run, tmp_path: Path) -> None:
    (tmp_path / "cfg.yaml").write_text(
        "# served by the docs example\n"
        "model: meta-llama/Llama-3.1-8B-Instruct\n"
        "port: 6379\n"
        "enable-prefix-caching: false\n"
        "trust_remote_code: yes\n"
        "hf-overrides:\n"
        "  ü: 1\n"
        "served-model-name: [a, 'b c']\n"
        "kv-transfer-config:\n"
        "  kv_connector: NixlConnector\n"
        "  kv_role: kv_both\n"
        "gpu-memory-utilization: .85\n",
        encoding="utf-8",
    )
    (tmp_path / "run.sh").write_text("vllm serve --config cfg.yaml --port 8000\n", encoding="utf-8")
    result = run("--repo", repo, "import", "run.sh", cwd=tmp_path)
    assert result.code == 0, result
    assert result.err.startswith(  # the notes, then what `check` says of the layer
        "note: line 1: `enable-prefix-caching: false` in a config file is ignored by `vllm serve`; "
        "left out of the layer\n"
        "note: line 1: --port is given more than once; the last value wins, as in vLLM\n"
    )
    assert _layer(repo, "llama-3.1-8b-instruct").split("[serve]\n", 1)[1] == (
        'model = "meta-llama/Llama-3.1-8B-Instruct"\n'
        "port = 8000\n"
        "trust_remote_code = true\n"
        'served_model_name = ["a", "b c"]\n'
        "gpu_memory_utilization = 0.85\n"
        "\n"
        "[serve.hf_overrides]\n"
        '"ü" = 1\n'
        "\n"
        "[serve.kv_transfer_config]\n"
        'kv_connector = "NixlConnector"\n'
        'kv_role = "kv_both"\n'
    )


@pytest.mark.parametrize(
    ("words", "message"),
    [
        (
            ["python", "-m", "http.server"],
            "cannot import the command line: `python -m http.server` is not a vllm serve launch\n  hint: profilekit "
            "import reads `export` and assignment lines and one launch: `vllm serve ...`, `python -m "
            "vllm.entrypoints.openai.api_server ...` or `docker run ... vllm/vllm-openai ...`, also behind a launcher "
            "(`srun`, `nsys profile`, `numactl`, `env`, `uv run`, `bash -c`, ...)",
        ),
        (
            ["vllm", "serve", "m", "extra"],
            "cannot import the command line: 'extra': vLLM serve takes one positional "
            "argument (the model), and 'm' is already it\n  hint: quote values that hold spaces, and check that every "
            "option has its value",
        ),
        (
            ["vllm", "serve", "m", "--port", "eighty"],
            "cannot import the command line: --port expects an integer, got 'eighty'",
        ),
        (
            ["vllm", "serve", "m", "--port"],
            "cannot import the command line: --port expects a value, and none follows it",
        ),
        (
            ["vllm", "serve", "m", "--mamba-ssm-cache-dtype", "fp9"],
            "cannot import the command line: "
            "--mamba-ssm-cache-dtype: vLLM 0.33.0 refuses 'fp9' for mamba_ssm_cache_dtype: \"argument "
            "--mamba-ssm-cache-dtype: invalid choice: 'fp9' (choose from 'auto', 'bfloat16', 'float16', 'float32')\"",
        ),
        (
            ["vllm", "serve", "m", "--mamba-backend", "tritn"],
            "cannot import the command line: --mamba-backend: "
            "'tritn' is not among the values vLLM 0.33.0 accepts for mamba_backend: triton, flashinfer, cpu (any case)",
        ),
        (
            ["vllm", "serve", "m", "--api-key", "k1"],
            "cannot import the command line: --api-key holds a credential, "
            "and profilekit keeps credentials out of layer files\n  hint: drop --api-key and set VLLM_API_KEY in the "
            "launching environment (the layer gets VLLM_API_KEY = { secret = true })",
        ),
        (
            ["vllm", "serve", "m", "--tokenizer", "hf_" + "a1" * 17],
            "cannot import the command line: --tokenizer holds what looks like a Hugging Face token; set HF_TOKEN "
            "in the environment",
        ),
        (
            ["vllm", "serve", "m", "--kv-transfer-config", '{"kv_connector": null}'],
            "cannot import the command line: --kv-transfer-config.kv_connector holds null, which TOML cannot represent",
        ),
        (
            ["vllm", "serve", "m", "--kv-transfer-config", "{nope"],
            "cannot import the command line: "
            "--kv-transfer-config is not valid JSON (Expecting property name enclosed in double quotes at character 1)",
        ),
        (
            ["vllm", "serve", "m", "--prefix-cache-retention-interval", "None"],
            "cannot import the command line: --prefix-cache-retention-interval is 'None', which vLLM reads as no "
            "value; TOML has no null",
        ),
        (
            ["vllm", "serve", "m", "--enforce-eager=yes"],
            "cannot import the command line: --enforce-eager takes no value, but '--enforce-eager=yes' gives one",
        ),
        (
            ["vllm", "serve", "m", "-d", "1"],
            "cannot import the command line: -d is ambiguous for vLLM 0.33.0: it "
            "could be -dc, -dcp, -dp, -dpa, -dpb, -dpe",
        ),
        (
            ["vllm", "serve", "m", "--config", "missing.yaml"],
            "cannot import the command line: --config "
            "missing.yaml: cannot read {cwd}/missing.yaml: No such file or directory",
        ),
        (
            ["vllm", "serve", "m", "--config", "c.json"],
            "cannot import the command line: --config c.json: vLLM reads only .yaml or .yml config files",
        ),
        (
            ["vllm", "serve", "m", "--kv-cache-metrics-sample", "-1.25", "--enforce-eager"],
            "cannot import the command line: '-1.25' starts with '-' and holds '.', so vLLM's parser takes it for a "
            "dotted option and swallows the word after it\n  hint: glue such a value to its option on the command "
            "line: --option=-1.25",
        ),
        (
            ["vllm", "serve", "--served-model-name", "x", "m"],
            "cannot import the command line: vLLM refuses --served-model-name unless the model is the first "
            "argument after `vllm serve`\n  hint: write `vllm serve MODEL --served-model-name ...`",
        ),
        (
            ["vllm", "serve", "--port", "1"],
            "cannot name the layer: the launch names no model to derive a name from\n  hint: pass --name NAME",
        ),
        (
            [],
            "nothing to import\n  hint: pass a launch after --, e.g. `profilekit import -- vllm serve MODEL "
            "...`, or a script file",
        ),
    ],
)
def test_refusals_name_the_reason_and_write_nothing(
    words: list[str], message: str, repo: Path, run: Run, tmp_path: Path
) -> None:
    result = run("--repo", repo, "import", "--", *words, cwd=tmp_path)
    assert result.code == 2, result
    assert result.err == "profilekit: error: " + message.replace("{cwd}", str(tmp_path)) + "\n"
    assert list((repo / "profiles").iterdir()) == []


def test_a_yaml_error_in_a_config_file_is_one_message_with_file_and_line(repo: Path, run: Run, tmp_path: Path) -> None:
    (tmp_path / "cfg.yaml").write_text("port: 8000\nserved-model-name: [a, b\nmax-num-seqs: 4\n", encoding="utf-8")
    result = run("--repo", repo, "import", "--", "vllm", "serve", "m", "--config", "cfg.yaml", cwd=tmp_path)
    assert result.code == 2, result
    assert result.err == (
        "profilekit: error: cannot import the command line: --config cfg.yaml: line 3, column 13: while parsing a "
        "flow sequence: expected ',' or ']', but got ':'\n"
    )
    assert "Traceback" not in result.out + result.err
    assert list((repo / "profiles").iterdir()) == []


def test_a_no_value_word_for_an_option_whose_default_is_none_is_left_out(repo: Path, run: Run) -> None:
    result = run("--repo", repo, "import", "--", "vllm", "serve", "m", "--host=", "--chat-template", "None")
    assert result.code == 0, result
    assert result.err == (
        "note: --host '' means no value, vLLM's default; left out of the layer\n"
        "note: --chat-template 'None' means no value, vLLM's default; left out of the layer\n"
    )
    assert _layer(repo, "m").endswith('[serve]\nmodel = "m"\n')


def test_an_existing_layer_is_never_overwritten(repo: Path, run: Run) -> None:
    (repo / "profiles" / "m.toml").write_text("# mine\n", encoding="utf-8")
    result = run("--repo", repo, "import", "--", "vllm", "serve", "org/M")
    assert result.code == 2
    assert result.err == (
        "profilekit: error: profiles/m.toml already exists; profilekit import never overwrites a layer\n"
        "  hint: choose another --name\n"
    )
    assert (repo / "profiles" / "m.toml").read_text(encoding="utf-8") == "# mine\n"
    result = run("--repo", repo, "import", "--name", "../escape", "--", "vllm", "serve", "org/M")
    assert result.code == 2
    assert result.err == (
        "profilekit: error: '../escape' is not a layer name\n"
        "  hint: use letters, digits, '_', '.', '-' and '/' for folders, e.g. --name site/qwen-pd (no .toml)\n"
    )


@pytest.mark.parametrize(
    ("script", "message"),
    [
        (
            "vllm serve a\nvllm serve b\n",
            "it holds more than one vllm serve launch (lines 1 and 2)\n  hint: import "
            "one launch per layer: copy each into its own script, or pass it after --",
        ),
        (
            "source env.sh\nvllm serve a\n",
            "line 1: `source env.sh` is not a vllm serve launch\n  hint: profilekit import reads `export` and "
            "assignment lines and one launch: `vllm serve ...`, `python -m vllm.entrypoints.openai.api_server ...` "
            "or `docker run ... vllm/vllm-openai ...`, also behind a launcher (`srun`, `nsys profile`, `numactl`, "
            "`env`, `uv run`, `bash -c`, ...)",
        ),
        (
            "vllm serve $(cat model.txt)\n",
            "line 1: $(cat model.txt): shell expansions cannot be represented; write the value",
        ),
        (
            "vllm serve a --download-dir ~/models\n",
            "line 1: ~: bash expands ~ to the home folder of whoever runs the script; write the path",
        ),
        (
            "vllm serve a --ignore-patterns *.bin\n",
            "line 1: *: bash expands a glob against the files present at launch; quote the value",
        ),
        ("vllm serve 'a\n", "line 1: a ' quote is never closed"),
        ("# nothing here\n", "no `vllm serve` command found"),
    ],
)
def test_scripts_with_shell_constructs_are_refused(
    script: str, message: str, repo: Path, run: Run, tmp_path: Path
) -> None:
    (tmp_path / "s.sh").write_text(script, encoding="utf-8")
    result = run("--repo", repo, "import", "s.sh", cwd=tmp_path)
    assert result.code == 2, result
    assert result.err == f"profilekit: error: cannot import s.sh: {message}\n"


def test_quoted_shell_characters_are_plain_values() -> None:
    commands = split_commands(
        "vllm serve 'a b' --chat-template \"{{ x | y }} \\$HOME\" --x '$(no)' --y a#b # comment\n"
    )
    assert [c.words for c in commands] == [
        ["vllm", "serve", "a b", "--chat-template", "{{ x | y }} $HOME", "--x", "$(no)", "--y", "a#b"]
    ]


def test_config_files_resolve_scalars_as_pyyaml_does_for_vllm() -> None:
    mapping = read_yaml(
        "a: yes\nb: Off\nc: ~\nd: '1'\ne: 1.5\nf: +3\ng: \"x\\ty\"\nh: [1, two, 'th ree']\ni:\n  - x\n  - 2\n"
        "j:\n  k:\n    l: null\nk: 010\nl: 2024-01-01\nm: &x 7\nn: *x\no: |\n  two\n  lines\n"
    )
    assert mapping == {
        "a": True,
        "b": False,
        "c": None,
        "d": "1",
        "e": 1.5,
        "f": 3,
        "g": "x\ty",
        "h": [1, "two", "th ree"],
        "i": ["x", 2],
        "j": {"k": {"l": None}},
        "k": 8,  # YAML 1.1 octal, as vLLM reads it
        "l": datetime.date(2024, 1, 1),
        "m": 7,
        "n": 7,
        "o": "two\nlines\n",
    }
    notes: list[str] = []
    args = config_args(
        {"enable-prefix-caching": False, "headless": True, "x": [True, 1.0], "y": None, "l": mapping["l"]}, notes
    )
    # false is dropped (the real `vllm` command looks --no-KEY up among its top-level options); lists ->
    # str(item); None -> "None"; a date -> str(date)
    assert args == ["--headless", "--x", "True", "1.0", "--y", "None", "--l", "2024-01-01"]
    assert notes == [
        "`enable-prefix-caching: false` in a config file is ignored by `vllm serve`; left out of the layer"
    ]


def test_a_key_given_twice_keeps_its_last_value_as_in_vllm() -> None:
    assert read_yaml("a: 1\nb: 2\na: 3\n") == {"a": 3, "b": 2}


def test_yaml_double_quoted_strings_keep_escaped_quotes_and_hashes() -> None:
    text = 'a: ["dq\\"x", "0"]\nb: "x \\" #not a comment"  # a comment\nc: \'it\'\'s\'\n'
    assert read_yaml(text) == {"a": ['dq"x', "0"], "b": 'x " #not a comment', "c": "it's"}


@pytest.mark.parametrize(
    ("text", "message"),
    [
        ("a: [1, 2\n", "line 2, column 1: while parsing a flow sequence: expected ',' or ']', but got '<stream end>'"),
        ("a: b: c\n", "line 1, column 5: mapping values are not allowed here"),
        ("a: 1\n  b: 2\n", "line 2, column 4: mapping values are not allowed here"),
        (
            "a:\tb\n",
            "line 1, column 3: while scanning for the next token: found character '\\t' that cannot start any token",
        ),
        ("- a\n", "line 1, column 1: a config file is a mapping of option names to values"),
        ("1: x\n", "line 1, column 1: the option name '1' is not a string; quote it"),
        (
            "a:\n  when: 2024-01-01\n",
            "line 2, column 3: a: vLLM passes a mapping on as JSON, and this one cannot be (Object of type date is not "
            "JSON serializable); quote the value that is not a string, number, boolean or null",
        ),
        ("# only a comment\n", "the file holds no options; vLLM cannot start from an empty config file"),
        ("a: 1\n---\nb: 2\n", "line 2, column 1: expected a single document in the stream: but found another document"),
    ],
)
def test_yaml_vllm_cannot_use_is_refused_with_the_line(text: str, message: str) -> None:
    with pytest.raises(YamlError) as caught:
        read_yaml(text)
    assert str(caught.value) == message


@settings(max_examples=300, deadline=None)
@given(text=st.text(alphabet=st.sampled_from(list("vlmserv -=.'\"\\\n$`|&;<>(){}[]*?~#:,0123456789ab_/")), max_size=60))
def test_no_input_gives_a_traceback(text: str, tmp_path_factory: pytest.TempPathFactory) -> None:
    catalogue = load_catalogue("0.33.0")
    assert catalogue is not None
    root = tmp_path_factory.mktemp("r")
    (root / "profiles").mkdir(exist_ok=True)
    script = root / "s.sh"
    script.write_text("vllm serve m " + text, encoding="utf-8")
    for words in (["s.sh"], ["vllm", "serve", *text.split(" ")]):
        with contextlib.suppress(UsageError):
            import_launch(root, words, name="x", catalogue=catalogue, cwd=root)
    shutil.rmtree(root)
