# SPDX-License-Identifier: Apache-2.0
"""edgetensor.info(): runs the `edgetensor info --json` found next to the package (or $EDGETENSOR_CLI)."""

import os
import stat

import pytest

import edgetensor as et


def test_info_returns_the_parsed_report():
    report = et.info()
    assert report["schema"] == "edgetensor.info/1"
    sections = {s["name"]: s["status"] for s in report["sections"]}
    assert sections["heap"] == "ok" and sections["shm (memfd)"] == "ok"


def test_cli_override(monkeypatch, tmp_path):
    fake = tmp_path / "edgetensor"
    fake.write_text('#!/bin/sh\necho \'{"schema": "edgetensor.info/1", "args": "\'"$*"\'"}\'\n')
    fake.chmod(fake.stat().st_mode | stat.S_IXUSR)
    monkeypatch.setenv(et.CLI_ENV, str(fake))
    assert et.info() == {"schema": "edgetensor.info/1", "args": "info --json"}
    monkeypatch.setenv(et.CLI_ENV, str(tmp_path / "missing"))
    with pytest.raises(FileNotFoundError, match="missing"):
        et.info()
    fake.write_text("#!/bin/sh\necho broken >&2\nexit 3\n")
    monkeypatch.setenv(et.CLI_ENV, str(fake))
    with pytest.raises(Exception) as e:
        et.info()
    assert e.value.returncode == 3 and "broken" in e.value.stderr
    assert os.path.basename(et._cli_path()) == "edgetensor"
