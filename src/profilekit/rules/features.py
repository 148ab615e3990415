"""Features `EngineArgs._check_feature_supported` refuses (vllm/engine/arg_utils.py, identical in every release
0.27.0-0.33.0): pipeline parallelism needs the Ray, multiprocessing or external-launcher executor, or an executor
class that says `supports_pp` (a name given on the command line is a string, which never does). The check runs in
`create_engine_config` right after ModelConfig is built.
"""

from __future__ import annotations

from collections.abc import Iterable

from profilekit.errors import Severity
from profilekit.rules import order
from profilekit.rules.engine import Context, Hit, rule
from profilekit.rules.facts import RoleFacts
from profilekit.rules.modelcfg import serve_int, shown

PP_EXECUTORS = ("ray", "mp", "external_launcher")
PP_FEATURE = "Pipeline Parallelism without Ray distributed executor or multiprocessing executor or external launcher"
CHECK_FEATURES = 50  # after ModelConfig's own checks (rank + 1), before the scheduler defaults


@rule(
    "pipeline-parallel-executor",
    Severity.ERROR,
    "pipeline parallelism with an executor other than ray, mp or external_launcher",
    source="vllm/engine/arg_utils.py EngineArgs._check_feature_supported",
)
def pipeline_parallel_executor(ctx: Context, f: RoleFacts) -> Iterable[Hit]:
    pp = serve_int(f, "pipeline_parallel_size", 1)
    backend = f.serve.get("distributed_executor_backend")
    if pp is None or pp <= 1 or not isinstance(backend, str) or backend in PP_EXECUTORS:
        return []
    return [
        Hit(
            "pipeline-parallel-executor",
            f"pipeline_parallel_size = {pp} with distributed_executor_backend = {shown(backend)}; vLLM {f.version} "
            f'refuses to start: "{PP_FEATURE} is not supported. We recommend to remove {PP_FEATURE} from your config."',
            [*f.loc("serve", "pipeline_parallel_size"), *f.loc("serve", "distributed_executor_backend")],
            'set distributed_executor_backend to "mp" or "ray" (or leave it out), or pipeline_parallel_size = 1',
            role=f.role.name,
            order=order.built("ModelConfig", f.version, CHECK_FEATURES),
        )
    ]
