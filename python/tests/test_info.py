# SPDX-License-Identifier: Apache-2.0
"""edgetensor.info(): edgetensor::probe()'s report, parsed; in this process, no CLI involved."""

import subprocess

import edgetensor as et


def test_info_returns_the_parsed_report():
    report = et.info()
    assert report["schema"] == "edgetensor.info/1"
    assert report["version"] == et.__version__
    sections = {s["name"]: s["status"] for s in report["sections"]}
    assert list(sections) == ["heap", "shm (memfd)", "shm (named POSIX)", "dmabuf", "gl_pbo", "cuda"]
    assert sections["heap"] == "ok" and sections["shm (memfd)"] == "ok"
    assert set(sections.values()) <= {"ok", "unavailable", "failed"}
    assert report["system"]["page_size_bytes"] > 0


def test_info_probes_in_process_without_the_cli(monkeypatch):
    def no_subprocess(*args, **kwargs):
        raise AssertionError("info() started a process: %r" % (args,))

    monkeypatch.setattr(subprocess, "Popen", no_subprocess)
    monkeypatch.setenv("PATH", "/nonexistent")
    report = et.info()
    memfd = next(s for s in report["sections"] if s["name"] == "shm (memfd)")
    assert memfd["round_trip"] is None, memfd
    assert "no cross-process round trip" in memfd["detail"], memfd
    assert not hasattr(et, "CLI_ENV")
