"""Configuration layers, value parsing and the errors users see."""

from __future__ import annotations

from pathlib import Path

import pytest

from coderecall import Config, ConfigError, Error, load_config
from coderecall._config import DEFAULT_MAX_FILE_SIZE


def write(root: Path, name: str, text: str) -> Path:
    path = root / name
    path.write_text(text, encoding="utf-8")
    return path


def test_defaults_without_any_file(tmp_path: Path) -> None:
    config = load_config(tmp_path)
    assert config == Config()
    assert config.include == ()
    assert config.exclude == ()
    assert config.max_file_size == DEFAULT_MAX_FILE_SIZE == 1_048_576
    assert config.index_dir is None
    assert config.respect_gitignore is True
    assert (config.limit, config.per_file) == (10, 4)
    assert config.mcp_tools == ("code", "memory", "knowledge", "diagnostics")


def test_mcp_tool_sets_always_hold_the_code_tools(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    write(tmp_path, ".coderecall.toml", 'mcp-tools = ["Memory"]\n')
    assert load_config(tmp_path).mcp_tools == ("code", "memory")
    monkeypatch.setenv("CODERECALL_MCP_TOOLS", "diagnostics, knowledge,")
    assert load_config(tmp_path).mcp_tools == ("code", "knowledge", "diagnostics")
    assert Config(mcp_tools=()).mcp_tools == ("code",)


def test_pyproject_table_overrides_defaults(tmp_path: Path) -> None:
    write(
        tmp_path,
        "pyproject.toml",
        '[project]\nname = "x"\n\n[tool.coderecall]\n'
        'include = ["src/", "*.md"]\nmax-file-size = "2MB"\nrespect-gitignore = false\n',
    )
    config = load_config(tmp_path)
    assert config.include == ("src/", "*.md")
    assert config.max_file_size == 2_000_000
    assert config.respect_gitignore is False
    assert config.limit == 10


def test_pyproject_without_our_table_is_fine(tmp_path: Path) -> None:
    write(tmp_path, "pyproject.toml", '[tool.ruff]\nline-length = 100\n[project]\nname = "x"\n')
    assert load_config(tmp_path) == Config()


def test_dotfile_overrides_pyproject_key_by_key(tmp_path: Path) -> None:
    write(tmp_path, "pyproject.toml", "[tool.coderecall]\nlimit = 3\nper-file = 5\n")
    write(tmp_path, ".coderecall.toml", "limit = 5\n")
    config = load_config(tmp_path)
    assert config.limit == 5
    assert config.per_file == 5


def test_environment_overrides_dotfile(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    write(tmp_path, ".coderecall.toml", 'limit = 5\nexclude = ["a"]\n')
    monkeypatch.setenv("CODERECALL_LIMIT", "7")
    monkeypatch.setenv("CODERECALL_EXCLUDE", " vendor/ , *.gen.py,, ")
    monkeypatch.setenv("CODERECALL_MAX_FILE_SIZE", "512KiB")
    config = load_config(tmp_path)
    assert config.limit == 7
    assert config.exclude == ("vendor/", "*.gen.py")
    assert config.max_file_size == 512 * 1024


def test_overrides_beat_environment_and_none_means_unset(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    write(tmp_path, ".coderecall.toml", "per-file = 3\n")
    monkeypatch.setenv("CODERECALL_LIMIT", "7")
    config = load_config(tmp_path, {"limit": 9, "per_file": None, "max-file-size": 100})
    assert config.limit == 9
    assert config.per_file == 3
    assert config.max_file_size == 100


@pytest.mark.parametrize(
    ("text", "expected"),
    [("1", True), ("0", False), ("true", True), ("FALSE", False), ("yes", True), ("no", False)],
)
def test_environment_booleans(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, text: str, expected: bool
) -> None:
    monkeypatch.setenv("CODERECALL_RESPECT_GITIGNORE", text)
    assert load_config(tmp_path).respect_gitignore is expected


def test_environment_variables_naming_no_key_are_left_to_others(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setenv("CODERECALL_MODELS", str(tmp_path))  # read by the model cache
    monkeypatch.setenv("CODERECALL_SOMETHING_ELSE", "1")
    assert load_config(tmp_path) == Config()


@pytest.mark.parametrize(
    ("variable", "value"),
    [
        ("CODERECALL_LIMIT", "ten"),
        ("CODERECALL_PER_FILE", "0"),
        ("CODERECALL_RESPECT_GITIGNORE", "maybe"),
        ("CODERECALL_MAX_FILE_SIZE", "big"),
    ],
)
def test_bad_environment_value_names_the_variable(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, variable: str, value: str
) -> None:
    monkeypatch.setenv(variable, value)
    with pytest.raises(ConfigError) as caught:
        load_config(tmp_path)
    assert variable in str(caught.value)
    assert repr(value) in str(caught.value)
    assert caught.value.source == f"environment variable {variable}"
    # The key as the user wrote it: the variable, never the field's snake_case name.
    assert caught.value.key == variable
    field = variable.removeprefix("CODERECALL_").lower()
    assert f"'{field}'" not in str(caught.value)


def test_kebab_and_snake_case_are_the_same_key(tmp_path: Path) -> None:
    write(tmp_path, ".coderecall.toml", "max_file_size = 10\nper-file = 1\n")
    config = load_config(tmp_path)
    assert (config.max_file_size, config.per_file) == (10, 1)


def test_a_key_set_in_both_spellings_is_an_error(tmp_path: Path) -> None:
    path = write(tmp_path, ".coderecall.toml", "max_file_size = 10\nmax-file-size = 20\n")
    with pytest.raises(ConfigError, match="set twice") as caught:
        load_config(tmp_path)
    assert str(path) in str(caught.value)


@pytest.mark.parametrize(
    ("name", "text"),
    [
        ("pyproject.toml", "[tool.coderecall]\nmax-filesize = 10\n"),
        (".coderecall.toml", "max-filesize = 10\n"),
    ],
)
def test_unknown_key_names_key_and_file(tmp_path: Path, name: str, text: str) -> None:
    path = write(tmp_path, name, text)
    with pytest.raises(ConfigError) as caught:
        load_config(tmp_path)
    message = str(caught.value)
    assert "unknown key 'max-filesize'" in message
    assert str(path) in message
    assert "did you mean 'max-file-size'" in message
    assert caught.value.key == "max-filesize"


def test_unknown_key_without_a_close_match_lists_the_known_keys(tmp_path: Path) -> None:
    write(tmp_path, ".coderecall.toml", "colour = 'blue'\n")
    with pytest.raises(
        ConfigError, match="known keys: context-budget, exclude, gc-grace, include, index-dir"
    ):
        load_config(tmp_path)


def test_unknown_override_key_is_an_error(tmp_path: Path) -> None:
    with pytest.raises(ConfigError, match="overrides: unknown key 'limits'"):
        load_config(tmp_path, {"limits": 3})


@pytest.mark.parametrize(
    ("line", "key"),
    [
        ("limit = 0", "limit"),
        ('limit = "ten"', "limit"),
        ("limit = true", "limit"),
        ("per-file = -1", "per-file"),
        ('respect-gitignore = "yes"', "respect-gitignore"),
        ('include = "src/"', "include"),
        ("include = [1, 2]", "include"),
        ('exclude = ["!"]', "exclude"),
        ('max-file-size = "lots"', "max-file-size"),
        ('max-file-size = "10 parsecs"', "max-file-size"),
        ("max-file-size = 0", "max-file-size"),
        ("max-file-size = 1.5", "max-file-size"),
        ("index-dir = 3", "index-dir"),
        ("[embedding]\nmax-retries = -1", "embedding.max-retries"),
        ('[embedding]\nread-timeout = "0s"', "embedding.read-timeout"),
        ('[embedding]\nconnect-timeout = "soon"', "embedding.connect-timeout"),
        ("[embedding]\nbackoff-max = -1", "embedding.backoff-max"),
        ("[embedding]\ninput-token-limit = 0", "embedding.input-token-limit"),
        ('[embedding]\napi-key-env = "1ST_KEY"', "embedding.api-key-env"),
        ('mcp-tools = ["code", "mem"]', "mcp-tools"),
        ('mcp-tools = "memory"', "mcp-tools"),
    ],
)
def test_bad_value_names_key_and_file(tmp_path: Path, line: str, key: str) -> None:
    path = write(tmp_path, ".coderecall.toml", line + "\n")
    with pytest.raises(ConfigError) as caught:
        load_config(tmp_path)
    message = str(caught.value)
    assert f"invalid value for {key!r}" in message
    assert str(path) in message
    assert (caught.value.key, caught.value.source) == (key, str(path))


def test_invalid_toml_names_file_and_line(tmp_path: Path) -> None:
    path = write(tmp_path, ".coderecall.toml", 'limit = 3\ninclude = ["src/"\nexclude = []\n')
    with pytest.raises(ConfigError) as caught:
        load_config(tmp_path)
    message = str(caught.value)
    assert str(path) in message
    assert "invalid TOML" in message
    assert "line 3" in message


def test_truncated_toml_names_the_last_line(tmp_path: Path) -> None:
    write(tmp_path, ".coderecall.toml", "limit = 3\ninclude = [\n")
    with pytest.raises(ConfigError, match=r"invalid TOML: .*end of document.* \(line 3\)"):
        load_config(tmp_path)


def test_tool_coderecall_must_be_a_table(tmp_path: Path) -> None:
    path = write(tmp_path, "pyproject.toml", '[tool]\ncoderecall = "yes"\n')
    with pytest.raises(ConfigError, match=r"\[tool\.coderecall\] must be a table") as caught:
        load_config(tmp_path)
    assert str(path) in str(caught.value)


@pytest.mark.parametrize(
    ("value", "expected"),
    [
        ("4096", 4096),
        ('"4096"', 4096),
        ('"2MB"', 2_000_000),
        ('"10 kb"', 10_000),
        ('"512KiB"', 524_288),
        ('"3MiB"', 3 * 1024**2),
        ('"1GiB"', 1024**3),
        ('"1.5m"', 1_572_864),
        ('"64k"', 65_536),
        ('"100b"', 100),
    ],
)
def test_size_strings(tmp_path: Path, value: str, expected: int) -> None:
    write(tmp_path, ".coderecall.toml", f"max-file-size = {value}\n")
    assert load_config(tmp_path).max_file_size == expected


def test_relative_index_dir_in_a_file_is_relative_to_the_root(tmp_path: Path) -> None:
    write(tmp_path, ".coderecall.toml", 'index-dir = "var/index"\n')
    assert load_config(tmp_path).index_dir == tmp_path / "var" / "index"


def test_relative_index_dir_elsewhere_is_relative_to_the_current_directory(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    elsewhere = tmp_path / "elsewhere"
    elsewhere.mkdir()
    monkeypatch.chdir(elsewhere)
    monkeypatch.setenv("CODERECALL_INDEX_DIR", "from-env")
    assert load_config(tmp_path).index_dir == elsewhere / "from-env"
    assert load_config(tmp_path, {"index_dir": "given"}).index_dir == elsewhere / "given"


def test_index_dir_expands_the_home_directory(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setenv("HOME", str(tmp_path / "home"))
    write(tmp_path, ".coderecall.toml", 'index-dir = "~/indexes/x"\n')
    assert load_config(tmp_path).index_dir == tmp_path / "home" / "indexes" / "x"


def test_config_normalises_and_validates_on_construction() -> None:
    config = Config(include=["src/"], exclude=["*.md"], max_file_size="1KiB")  # type: ignore[arg-type]
    assert config.include == ("src/",)
    assert config.exclude == ("*.md",)
    assert config.max_file_size == 1024
    with pytest.raises(ConfigError, match="invalid value for 'limit'") as caught:
        Config(limit=0)
    assert isinstance(caught.value, ValueError)
    assert isinstance(caught.value, Error)
    with pytest.raises(ConfigError, match="invalid value for 'include'"):
        Config(include="src/")  # type: ignore[arg-type]  # a bare string is a classic bug


def test_prompts_are_kept_as_written(tmp_path: Path) -> None:
    (tmp_path / ".coderecall.toml").write_text(
        '[embedding]\nquery-prompt = "query: "\ndocument-prompt = ""\n'
    )
    config = load_config(tmp_path)
    assert (config.embedding_query_prompt, config.embedding_document_prompt) == ("query: ", "")
    assert Config().embedding_query_prompt is None
    with pytest.raises(ConfigError, match=r"embedding_query_prompt.*expected a string"):
        Config(embedding_query_prompt=3)  # type: ignore[arg-type]


def test_remote_request_tuning(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    write(
        tmp_path,
        ".coderecall.toml",
        '[embedding]\nmax-retries = 0\nread-timeout = "500ms"\nconnect-timeout = 2\n'
        'backoff-max = "2m"\ninput-token-limit = 480\n',
    )
    config = load_config(tmp_path)
    assert config.embedding_max_retries == 0
    assert config.embedding_read_timeout == 0.5
    assert config.embedding_connect_timeout == 2.0
    assert config.embedding_backoff_max == 120.0
    assert config.embedding_input_token_limit == 480
    monkeypatch.setenv("CODERECALL_EMBEDDING_MAX_RETRIES", "3")
    assert load_config(tmp_path).embedding_max_retries == 3
    assert Config().embedding_max_retries is None, "unset: the provider's default"


@pytest.mark.parametrize("where", ["file", "environment"])
def test_a_key_given_as_api_key_env_is_refused_and_never_echoed(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, where: str
) -> None:
    key = "sk-proj-SECRETKEY1234567890abcdef"
    if where == "file":
        write(tmp_path, ".coderecall.toml", f'[embedding]\napi-key-env = "{key}"\n')
    else:
        monkeypatch.setenv("CODERECALL_EMBEDDING_API_KEY_ENV", key)
    with pytest.raises(ConfigError, match="looks like a key, not a variable name") as caught:
        load_config(tmp_path)
    assert key not in str(caught.value)
    assert "SECRETKEY" not in repr(caught.value)
    monkeypatch.setenv("CODERECALL_EMBEDDING_API_KEY_ENV", " MY_EMBEDDER_KEY ")
    write(tmp_path, ".coderecall.toml", "")
    assert load_config(tmp_path).embedding_api_key_env == "MY_EMBEDDER_KEY"
