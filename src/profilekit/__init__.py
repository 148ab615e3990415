"""profilekit: typed, layered vLLM deployment profiles that vLLM itself would accept."""

__version__ = "0.1.0"
