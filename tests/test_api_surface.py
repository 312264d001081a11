"""The public names are pinned: adding or removing one is a deliberate change to this file."""

from __future__ import annotations

import importlib.metadata

import coderecall


def test_exported_names() -> None:
    assert set(coderecall.__all__) == {
        "CallEdge",
        "CallGraphResult",
        "CallPath",
        "CancelledError",
        "CodeIndex",
        "Config",
        "ConfigError",
        "ContextPack",
        "Definition",
        "Embedder",
        "EmbeddingEstimate",
        "Error",
        "Evidence",
        "HealthReport",
        "IndexBusyError",
        "IndexCorruptError",
        "IndexDirError",
        "IndexMetrics",
        "IndexReport",
        "IndexStatus",
        "KnowledgeBase",
        "LearnSummary",
        "MemoryBlock",
        "MemoryHit",
        "MemoryRecord",
        "MemoryStore",
        "ModelError",
        "ModelInfo",
        "ProviderAuthError",
        "ProviderError",
        "ProviderResponseError",
        "ProviderUnavailableError",
        "QueryError",
        "RootNotADirectoryError",
        "RootNotFoundError",
        "RootRefusedError",
        "SearchHit",
        "SessionEvent",
        "SessionInfo",
        "Sessions",
        "StoreError",
        "Watcher",
        "WriteResult",
        "__version__",
        "distill_model",
        "learn_model",
        "list_models",
        "load_config",
        "load_embedder",
        "models_dir",
        "pull_model",
    }
    assert sorted(coderecall.__all__) == coderecall.__all__


def test_public_objects_belong_to_the_package() -> None:
    for name in coderecall.__all__:
        if not name.startswith("__"):
            assert getattr(coderecall, name).__module__ == "coderecall", name


def test_one_exception_tree() -> None:
    exceptions = [
        value
        for name in coderecall.__all__
        if isinstance(value := getattr(coderecall, name), type) and issubclass(value, BaseException)
    ]
    assert len(exceptions) == 16
    assert all(issubclass(exception, coderecall.Error) for exception in exceptions)
    assert issubclass(coderecall.Error, Exception)
    assert issubclass(coderecall.IndexCorruptError, coderecall.StoreError)
    assert issubclass(coderecall.ConfigError, ValueError)
    assert issubclass(coderecall.QueryError, ValueError)
    for remote in ("Auth", "Response", "Unavailable"):
        assert issubclass(getattr(coderecall, f"Provider{remote}Error"), coderecall.ProviderError)


def test_version_matches_the_installed_distribution() -> None:
    assert coderecall.__version__ == importlib.metadata.version("coderecall")
