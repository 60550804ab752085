"""The manifest finds a damaged file by name: missing, truncated, or with other bytes."""

from __future__ import annotations

import json
import zlib

from es_lightning.checkpoint_manifest import MANIFEST_FILE, file_crc32, verify_checkpoint, write_manifest


def _folder(tmp_path):
    folder = tmp_path / "ckpt"
    (folder / "es_state").mkdir(parents=True)
    (folder / "model.safetensors").write_bytes(b"\x01" * 1000)
    (folder / "es_state" / "master.safetensors").write_bytes(bytes(range(256)) * 8)
    (folder / "trainer_state.json").write_text('{"step": 2}')
    return folder


def test_the_manifest_lists_every_file_with_size_and_crc32(tmp_path):
    folder = _folder(tmp_path)
    write_manifest(folder)
    manifest = json.loads((folder / MANIFEST_FILE).read_text())
    assert sorted(manifest["files"]) == [
        "es_state/master.safetensors",
        "model.safetensors",
        "trainer_state.json",
    ]
    master = (folder / "es_state" / "master.safetensors").read_bytes()
    assert manifest["files"]["es_state/master.safetensors"] == {
        "size": 2048,
        "crc32": f"{zlib.crc32(master):08x}",  # the plain one-shot CRC of the bytes
    }
    assert not list(folder.glob(".*tmp"))  # written through a temporary file, renamed
    assert verify_checkpoint(folder).intact and verify_checkpoint(folder).verified


def test_file_crc32_reads_in_chunks_as_one_crc_over_the_bytes(tmp_path):
    data = bytes(range(256)) * (2**17)  # 32 MiB: two chunks
    (tmp_path / "f").write_bytes(data)
    assert file_crc32(tmp_path / "f") == f"{zlib.crc32(data):08x}"


def test_a_truncated_file_is_named_with_both_sizes(tmp_path):
    folder = _folder(tmp_path)
    write_manifest(folder)
    with open(folder / "model.safetensors", "r+b") as f:
        f.truncate(10)
    verdict = verify_checkpoint(folder)
    assert verdict.problem == "model.safetensors is 10 bytes, the manifest says 1000"


def test_a_changed_byte_of_the_same_size_fails_the_checksum(tmp_path):
    folder = _folder(tmp_path)
    write_manifest(folder)
    assert verify_checkpoint(folder).intact  # cached from here on, unless a file changes
    master = folder / "es_state" / "master.safetensors"
    data = bytearray(master.read_bytes())
    data[100] ^= 0xFF
    master.write_bytes(bytes(data))
    verdict = verify_checkpoint(folder)
    assert verdict.problem.startswith("es_state/master.safetensors does not match its checksum")


def test_a_deleted_file_is_named(tmp_path):
    folder = _folder(tmp_path)
    write_manifest(folder)
    (folder / "trainer_state.json").unlink()
    assert verify_checkpoint(folder).problem == "trainer_state.json is missing"


def test_no_manifest_is_intact_but_unverified_and_a_bad_one_is_a_problem(tmp_path):
    folder = _folder(tmp_path)
    verdict = verify_checkpoint(folder)
    assert verdict.intact and not verdict.verified
    (folder / MANIFEST_FILE).write_text("{not json")
    assert verify_checkpoint(folder).problem.startswith(f"{MANIFEST_FILE} is unreadable")
