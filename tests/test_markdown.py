"""`check` and `lint` `--format markdown`: what a pull request and `$GITHUB_STEP_SUMMARY` show.

Golden files hold the Markdown source; the tests also render it with a CommonMark parser with GFM tables
(markdown-it-py) and read what a reader sees: table cells, their text, and that no HTML of a user's got through.
"""

from __future__ import annotations

import json
from html.parser import HTMLParser

from markdown_it import MarkdownIt

from profilekit.lint.repository import LintReport, Pair
from profilekit.report.markdown import MATRIX_MAX, format_lint
from tests.conftest import REPO_ROOT, MakeRepo, Run
from tests.test_check_output import _golden
from tests.test_lint import FAST, NEMO, OFFLOAD

ZWSP = "\u200b"  # what keeps `@kv-connector` from mentioning a GitHub team


class _Tables(HTMLParser):
    """The tables of an HTML page as rows of cell texts, and every tag the page has."""

    def __init__(self) -> None:
        super().__init__()
        self.tables: list[list[list[str]]] = []
        self.tags: set[str] = set()
        self._cell: list[str] | None = None

    def handle_starttag(self, tag: str, attrs: list[tuple[str, str | None]]) -> None:
        self.tags.add(tag)
        if tag == "table":
            self.tables.append([])
        elif tag == "tr":
            self.tables[-1].append([])
        elif tag in ("td", "th"):
            self._cell = []
        elif tag == "br" and self._cell is not None:
            self._cell.append("\n")

    def handle_endtag(self, tag: str) -> None:
        if tag in ("td", "th") and self._cell is not None:
            self.tables[-1][-1].append("".join(self._cell).replace(ZWSP, ""))
            self._cell = None

    def handle_data(self, data: str) -> None:
        if self._cell is not None:
            self._cell.append(data)


def rendered(markdown: str) -> _Tables:
    html = MarkdownIt("commonmark").enable(["table", "strikethrough"]).render(markdown)
    parser = _Tables()
    parser.feed(html)
    return parser


def test_check_markdown_of_replayssm_with_offload(run: Run) -> None:
    result = run("check", "nemotron-replayssm+offload", "--format", "markdown", cwd=REPO_ROOT)
    assert result.code == 1, result
    assert result.err == ""
    _golden("check-nemotron-replayssm+offload.md", result.out)
    (table,) = rendered(result.out).tables
    assert table[0] == ["line", "severity", "rule", "message", "fix"]
    assert table[2][:3] == ["9", "❌ error", "replayssm-kv-connector"]
    assert table[2][3] == (
        'use_replayssm = true with the OffloadingConnector (kv_role "kv_both") that kv_offloading_size = 16 creates; '
        'vLLM 0.33.0 refuses to start: "--use-replayssm is incompatible with KV connectors (P/D disaggregation, KV '
        'cache offload)"\n'
        "in stack nemotron-replayssm+offload, role serve\n"
        "also profiles/offload.toml:7 (serve.kv_offloading_size, layer offload)\n"
        "also profiles/offload.toml:8 (serve.kv_offloading_backend, layer offload)"
    )
    assert table[2][4] == (
        "ReplaySSM and KV connectors cannot share a vLLM instance: remove the connector from this role "
        "(serve.kv_offloading_size), or turn use_replayssm off"
    )


def test_check_markdown_of_a_clean_stack(run: Run) -> None:
    result = run("check", "nemotron-replayssm", "--format", "markdown", cwd=REPO_ROOT)
    assert result.code == 0, result
    assert result.out == "### profilekit check\n\n✅ `nemotron-replayssm`: **no problems found** (vLLM 0.33.0)\n"


def test_lint_markdown_of_the_example_repository(run: Run) -> None:
    result = run("lint", "--format", "markdown", cwd=REPO_ROOT)
    assert result.code == 0, result
    _golden("lint-example.md", result.out)
    matrix, capacity = rendered(result.out).tables
    assert capacity[0] == ["stack", "role", "GPU", "weights per GPU", "KV cache memory", "KV cache tokens", "verdict"]
    assert [(row[0], row[1], row[-1]) for row in capacity[1:]] == [
        # FP8 weights with their scales: not counted from config.json, and said so (`profilekit capacity`)
        ("deepseek-two-nodes", "decode", "unknown"),
        ("nemotron-replayssm+site/h100", "serve", "fits"),  # a hybrid model: weights and Mamba state counted too
        ("qwen-disaggregated+site/h100", "prefill", "fits"),
        ("qwen-disaggregated+site/h100", "decode", "fits"),
    ]
    names = ["deepseek-two-nodes", "models/nemotron-h-8b", "models/qwen3-0.6b", "nemotron-replayssm"]
    names += ["qwen-disaggregated", "qwen-offload"]
    assert matrix[0] == ["", *names]
    assert [row[0] for row in matrix[1:]] == names
    by_pair = {(row[0], name): cell for row in matrix[1:] for name, cell in zip(names, row[1:], strict=True)}
    assert by_pair["nemotron-replayssm", "models/nemotron-h-8b"] == "✅"  # it extends the model layer
    assert by_pair["qwen-disaggregated", "qwen-offload"] == "🔒 group kv-path"
    assert by_pair["nemotron-replayssm", "qwen-offload"] == "🔒 group model"
    assert all(by_pair[a, b] == by_pair[b, a] for a, b in by_pair)
    assert {by_pair[n, n] for n in names} == {"—"}


def test_lint_markdown_shows_an_undeclared_conflict(make_repo: MakeRepo, run: Run) -> None:
    root = make_repo({"nemo.toml": NEMO, "fast.toml": FAST, "offload.toml": OFFLOAD})
    result = run("lint", "--format", "markdown", cwd=root)
    assert result.code == 0, result  # a warning; `--strict` makes it fail
    assert run("lint", "--format", "markdown", "--strict", cwd=root).code == 1
    _golden("lint-undeclared-conflict.md", result.out)
    findings, matrix = rendered(result.out).tables
    assert [row[:3] for row in findings[1:]] == [["1", "⚠️ warning", "undeclared-conflict"]]
    assert findings[1][4].startswith("declare it in the [layer] table of 'fast': conflicts = [\"offload\"]")
    assert matrix[1:] == [
        ["fast", "—", "✅", "⚠️ replayssm-kv-connector"],
        ["nemo", "✅", "—", "✅"],
        ["offload", "⚠️ replayssm-kv-connector", "✅", "—"],
    ]
    assert "3 deployable layers, 3 pairs: 2 compose, 0 declared exclusive, 1 undeclared conflict." in result.out


def test_the_matrix_says_which_declaration_makes_a_pair_exclusive(make_repo: MakeRepo, run: Run) -> None:
    by_capability = FAST.replace('extends = ["nemo"]', 'extends = ["nemo"]\nconflicts = ["@kv-connector"]')
    by_name = '[layer]\nextends = ["nemo"]\nconflicts = ["fast"]\n\n[serve]\nmax_num_seqs = 8\n'
    root = make_repo({"nemo.toml": NEMO, "fast.toml": by_capability, "offload.toml": OFFLOAD, "small.toml": by_name})
    result = run("lint", "--format", "markdown", cwd=root)
    assert result.code == 0, result
    (matrix,) = rendered(result.out).tables
    assert matrix[1:] == [
        ["fast", "—", "✅", "🔒 conflicts @kv-connector", "🔒 conflicts fast"],
        ["nemo", "✅", "—", "✅", "✅"],
        ["offload", "🔒 conflicts @kv-connector", "✅", "—", "✅"],
        ["small", "🔒 conflicts fast", "✅", "✅", "—"],
    ]
    assert "4 deployable layers, 6 pairs: 4 compose, 2 declared exclusive, 0 undeclared conflicts." in result.out


def test_lint_markdown_without_combinations_says_so(make_repo: MakeRepo, run: Run) -> None:
    root = make_repo({"nemo.toml": NEMO, "fast.toml": FAST, "offload.toml": OFFLOAD})
    result = run("lint", "--format", "markdown", "--combinations", "none", cwd=root)
    assert result.code == 0, result
    assert result.out.endswith(
        "#### Layer compatibility\n\n"
        "Pairs of the 3 deployable layers were not checked (combinations = `none`; run "
        "`profilekit lint --combinations pairs`).\n"
    )


def test_many_layers_give_a_list_of_the_pairs_that_do_not_compose() -> None:
    names = [f"layer-{i:02d}" for i in range(MATRIX_MAX + 1)]
    pairs = {(a, b): Pair("composes") for i, a in enumerate(names) for b in names[i + 1 :]}
    pairs["layer-00", "layer-01"] = Pair("exclusive", ("group site",))
    pairs["layer-03", "layer-07"] = Pair("undeclared", ("replayssm-kv-connector",))
    report = LintReport([], files=13, stacks=names, combinations=len(pairs), mode="pairs", deployable=names)
    report.pairs = pairs
    text = format_lint(report, [], version="0.33.0")
    assert "13 deployable layers, 78 pairs: 76 compose, 1 declared exclusive, 1 undeclared conflict." in text
    (table,) = rendered(text).tables
    assert table == [
        ["layer", "layer", "outcome"],
        ["layer-03", "layer-07", "⚠️ replayssm-kv-connector"],
        ["layer-00", "layer-01", "🔒 group site"],
    ]


HOSTILE_KEY = "max_num_seqs|<b>*x*</b>"
HOSTILE_VALUE = "fp8`|@team <img src=x> $a$ ~~b~~ [l](u) \\\\|"


def test_user_text_renders_as_written_and_never_as_markup(make_repo: MakeRepo, run: Run) -> None:
    """Pipes, backticks, emphasis, links, HTML, math and mentions in what a user wrote reach the reader as text."""
    layer = (
        'model = "Qwen/Qwen3-0.6B"\n'
        f'"{HOSTILE_KEY}" = 1\n'
        f"kv_cache_dtype = {json.dumps(HOSTILE_VALUE)}\n"  # a JSON string is a TOML basic string
    )
    root = make_repo({"we`ird|<i>.toml": "[serve]\n" + layer})
    result = run("check", "we`ird|<i>", "--format", "markdown", cwd=root)
    assert result.code == 1, result
    page = rendered(result.out)
    assert page.tags <= {"h3", "h4", "p", "strong", "code", "table", "thead", "tbody", "tr", "th", "td", "br"}
    (table,) = page.tables
    assert all(len(row) == 5 for row in table)  # no `|` a user wrote split a cell
    findings = json.loads(run("check", "we`ird|<i>", "--format", "json", cwd=root).out)["findings"]
    assert len(table) == 1 + len(findings)  # the header, a row per finding
    for row, finding in zip(table[1:], findings, strict=True):
        assert row[2] == finding["rule"]
        assert row[3].split("\n")[0] == finding["message"]
        assert row[3].split("\n")[1] == f"in stack {finding['stack']}" + (
            f", role {finding['role']}" if "role" in finding else ""
        )
        assert row[4] == finding["fix"]
    assert repr(HOSTILE_VALUE) in table[2][3]  # as vLLM quotes it
    assert "@team" in table[2][3] and "@team" not in result.out  # shown, but cannot notify anyone


def test_a_broken_profilekit_toml_in_markdown(make_repo: MakeRepo, run: Run) -> None:
    root = make_repo({"nemo.toml": NEMO}, config="[vllm\n")
    result = run("lint", "--format", "markdown", cwd=root)
    assert result.code == 1, result
    assert result.out.startswith("### profilekit lint\n\n❌ **1 error, 0 warnings**\n")
    (table,) = rendered(result.out).tables
    assert table[1][:3] == ["1", "❌ error", "toml-syntax"]


def test_markdown_is_offered_in_the_help_of_check_and_lint(run: Run) -> None:
    for command in ("check", "lint"):
        result = run(command, "--help")
        words = " ".join(result.out.split())
        assert "github (workflow annotations); sarif (code scanning); markdown (for $GITHUB_STEP_SUMMARY" in words
