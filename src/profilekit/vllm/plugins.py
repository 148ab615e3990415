"""The entry-point groups vLLM loads plugins from, and what a plugin of each group can do to a server.

Read from `vllm/plugins/__init__.py` (the `*_PLUGINS_GROUP` names; the same in 0.27.0 and 0.33.0) and
`vllm/v1/sample/logits_processor/__init__.py` (`LOGITSPROCS_GROUP`). `load_plugins_by_group` loads every
entry point of a group unless `VLLM_PLUGINS` (names, comma-separated) is set; then only the names it lists.
"""

from __future__ import annotations

from profilekit.records import record


@record(frozen=True, slots=True)
class PluginGroup:
    name: str
    does: str  # when vLLM loads it, and what a plugin of it can change
    changes_config: bool  # a plugin of this group can change the effective configuration by being installed
    allowlisted: bool = True  # VLLM_PLUGINS, when set, limits what loads (endpoint plugins need to be named)


PLUGIN_GROUPS = (
    PluginGroup(
        "vllm.general_plugins",
        "runs in every vLLM process (API server, engine core, workers) at start-up; it can register a KV "
        "connector, a model or an attention backend, or change defaults",
        changes_config=True,
    ),
    PluginGroup(
        "vllm.platform_plugins",
        "loaded when vLLM first picks its platform; it can replace the platform (device, default attention "
        "backend, the platform's config checks)",
        changes_config=True,
    ),
    PluginGroup(
        "vllm.logits_processors",
        "every installed one is loaded into the engine and applied to every request (vLLM refuses custom logits "
        "processors together with speculative decoding)",
        changes_config=True,
        allowlisted=False,  # `_load_logitsprocs_plugins` does not read VLLM_PLUGINS
    ),
    PluginGroup(
        "vllm.io_processor_plugins",
        "loaded in the API server only, when --io-processor-plugin names it",
        changes_config=False,
    ),
    PluginGroup(
        "vllm.stat_logger_plugins",
        "loaded in the API server; it adds a metrics logger",
        changes_config=False,
    ),
    PluginGroup(
        "vllm.endpoint_plugins",
        "adds HTTP routes to the API server, only when VLLM_PLUGINS names it",
        changes_config=False,
    ),
)


def plugin_loads(group: PluginGroup, name: str, allowed: list[str] | None) -> bool:
    """Whether vLLM loads the plugin `name` of `group` given `VLLM_PLUGINS` split on commas (None: unset)."""
    if group.name == "vllm.endpoint_plugins":
        return allowed is not None and name in allowed
    return allowed is None or not group.allowlisted or name in allowed
