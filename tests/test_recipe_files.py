"""Recipe files that are no recipe, and argument errors: one line naming the cause, exit status 2,
no traceback and no usage dump (``es_lightning.cli.main`` in process, as the command runs it)."""

from __future__ import annotations

from pathlib import Path

import pytest

from es_lightning.cli import main
from es_lightning.errors import ConfigError
from es_lightning.recipe_files import check_recipe_file

BAD = {
    "latin1.yaml": (
        "trainer:\n  seed: 1 # caf\xe9\n".encode("latin-1"),
        "is not UTF-8 text (byte 0xe9 at offset 24)",
    ),
    "list.yaml": (b"- trainer\n- module\n", "is a YAML list, not a mapping of settings"),
    "scalar.yaml": (b"trainer\n", "is a YAML single str value, not a mapping of settings"),
    "empty.yaml": (b"", "is empty (no settings)"),
    "comments.yaml": (b"# nothing yet\n", "is empty (no settings)"),
    "tab.yaml": (b"trainer:\n\tseed: 1\n", "line 2: a tab indents it; YAML indents with spaces"),
    "broken.yaml": (b"trainer: {seed: 1\n", "line 2, column 1: "),
}


@pytest.mark.parametrize("name", sorted(BAD))
def test_a_file_that_is_no_recipe_is_named_with_its_cause(tmp_path, name):
    content, cause = BAD[name]
    path = tmp_path / name
    path.write_bytes(content)
    with pytest.raises(ConfigError) as raised:
        check_recipe_file(path)
    assert str(raised.value).startswith(f"recipe {path} {cause}"), str(raised.value)


def test_a_good_recipe_and_inline_yaml_pass(tmp_path):
    path = tmp_path / "ok.yaml"
    path.write_text("trainer:\n  seed: 1\n")
    check_recipe_file(path)
    check_recipe_file(Path("trainer: {seed: 1}"))  # inline YAML: the parser's to read
    with pytest.raises(FileNotFoundError, match="does not exist"):
        check_recipe_file(tmp_path / "missing.yaml")


def _one_line(capsys, args: list[str]) -> str:
    try:
        status = main(args)
    except SystemExit as stop:
        status = stop.code
    err = capsys.readouterr().err
    assert status == 2, err
    assert "Traceback" not in err and "usage:" not in err, err
    lines = err.strip().splitlines()
    assert len(lines) == 1 and lines[0].startswith("es-lightning: error: "), err
    return lines[0]


def test_the_command_says_one_line_for_a_bad_recipe_and_a_bad_argument(tmp_path, capsys, monkeypatch):
    monkeypatch.delenv("ES_LIGHTNING_DEBUG", raising=False)
    path = tmp_path / "latin1.yaml"
    path.write_bytes(BAD["latin1.yaml"][0])
    line = _one_line(capsys, ["fit", "--config", str(path)])
    assert f"recipe {path} is not UTF-8 text" in line
    line = _one_line(capsys, ["fit", "--trainer.max_steps", "many"])
    assert 'Parser key "trainer.max_steps"' in line and "Given value: many" in line, line
    assert line.endswith("; see es-lightning fit --help")
