"""The release report and card: byte-stable, escaped, and readable in a real browser (headless Chromium)."""
from __future__ import annotations

import json
import re
import shutil
import subprocess
from pathlib import Path

import pytest
import yaml

from trailforge.io import AnswerField, FileEntry, Reject, RepoRow, SeedRow, SnapshotRow, VerifiedTaskRow
from trailforge.release.report import PLOTS, write_release_report
from trailforge.release.stats import release_statistics

# Text from a source repository is untrusted: it must reach the page as text, never as markup.
HOSTILE = "<script>document.title='owned'</script><img src=x onerror=alert(1)>"
TABLE_IDS = ["by-task-type", "by-discipline", "task-type-by-discipline", "by-difficulty", "repository-yield",
             "lengths", "diversity", "funnel", "reject-reasons", "repositories"]


def _task(i: int, kind: str, repo: str, discipline: str) -> VerifiedTaskRow:
    return VerifiedTaskRow(
        task_id=f"{repo}-{kind}-{i}", task_type=kind, seed_id=f"{repo}:a.py", repo_id=repo, discipline=discipline,
        statement=f"Compute the {kind} result number {i} for {discipline} " + "using the data " * (i % 7 + 1),
        answer_schema=[AnswerField(name="x", type="number", label="x", source="stdout")], reference_answer={"x": 1.0},
        entrypoint="a.py", reference_program={"a.py": "import csv\n" * (i % 5 + 3)}, workspace_files=[],
        tree="/nonexistent", distributions=[], sandbox_spec={"isolation": "namespaces"},
        tolerances={"x": {"rtol": 1e-6, "atol": 0.0}}, checks={},
    )


def _statistics() -> dict:
    kinds = ["reproduction", "subflow", "completion", "correction"]
    tasks = [_task(i, kinds[i % 4], repo, discipline) for i in range(24)
             for repo, discipline in (("meadow", "ecology"), ("pendulum", "physics"))]
    repos = [RepoRow(repo_id=r, origin=f"https://example.org/{r}.git", origin_kind="git", discipline=d,
                     discipline_scores={}, has_paper=True) for r, d in (("meadow", "ecology"), ("pendulum", "physics"))]
    snapshots = [SnapshotRow(repo_id=r, origin=f"https://example.org/{r}.git", discipline="ecology", commit="ab" * 20,
                             content_hash="0" * 64, tree="/nonexistent", requirements=[], imports=[], distributions=[],
                             local_modules=[], files=[FileEntry(path=name, sha256="0", size=1, kind="text")])
                 for r, name in (("meadow", "LICENSE"), ("pendulum", "README.md"))]
    seeds = [SeedRow(seed_id=f"{r}:a.py", repo_id=r, discipline="ecology", script="a.py", tree="/nonexistent",
                     program_files=["a.py"], data_files=[], stdout="", files_written=[], distributions=[],
                     sandbox_spec={}) for r in ("meadow", "pendulum")]
    outcomes = [
        {"stage": "discover", "accepted": 2, "rejects": []},
        {"stage": "seeds", "accepted": 2, "rejects": [Reject(stage="seeds", item_id="meadow:bad.py",
                                                             reason="nonzero_exit", message=HOSTILE)]},
        {"stage": "tasks", "accepted": 48, "rejects": [Reject(stage="tasks", item_id=f"m{i}", reason="mutant_fails",
                                                              message="the mutant crashed") for i in range(5)]},
        {"stage": "verify", "accepted": 48, "rejects": []},
    ]
    return release_statistics(tasks, outcomes, seed=0, repos=repos, snapshots=snapshots, seed_rows=seeds)


def _write(out: Path, commit: str = "c" * 40, dirty: bool = True) -> dict[str, Path]:
    return write_release_report(out, name="tiny-release", recipe="tiny", params_hash="f" * 64,
                                version={"commit": commit, "package_version": "0.1.0", "dirty": dirty},
                                stats=_statistics(), recipe_facts={"llm_provider": "none", "statements": "deterministic"})


def test_the_report_and_card_are_byte_identical_across_renders(tmp_path):
    _write(tmp_path / "a")
    _write(tmp_path / "b")
    files = sorted(p.relative_to(tmp_path / "a") for p in (tmp_path / "a").rglob("*") if p.is_file())
    assert {p.name for p in files} == {"README.md", "index.html", *(file for file, *_ in PLOTS)}
    for path in files:
        assert (tmp_path / "a" / path).read_bytes() == (tmp_path / "b" / path).read_bytes(), f"{path} differs"
    png = (tmp_path / "a" / "report" / "funnel.png").read_bytes()
    assert b"Software" not in png and b"matplotlib" not in png.lower(), "no version stamp in the PNG"


def test_the_card_and_report_do_not_change_with_the_commit_they_were_built_at(tmp_path):
    # The commit that records a build's dvc.lock is newer than the one it ran at: a card naming its commit
    # could never be rebuilt byte for byte from the commit that ships it.
    _write(tmp_path / "a", commit="a" * 40, dirty=True)
    _write(tmp_path / "b", commit="b" * 40, dirty=False)
    for path in sorted(p.relative_to(tmp_path / "a") for p in (tmp_path / "a").rglob("*") if p.is_file()):
        assert (tmp_path / "a" / path).read_bytes() == (tmp_path / "b" / path).read_bytes(), f"{path} differs"
    assert "a" * 40 not in (tmp_path / "a" / "README.md").read_text()


def test_the_card_has_hub_metadata_and_escapes_repository_text(tmp_path):
    paths = _write(tmp_path)
    text = paths["card"].read_text(encoding="utf-8")
    front, body = re.match(r"---\n(.*?)\n---\n(.*)", text, re.S).groups()
    meta = yaml.safe_load(front)
    assert meta["license"] == "other" and meta["size_categories"] == ["n<1K"] and meta["pretty_name"] == "tiny-release"
    kinds = ["reproduction", "subflow", "completion", "correction"]
    assert [c["config_name"] for c in meta["configs"]] == ["default", *kinds]
    assert meta["configs"][0]["default"] is True  # load_dataset(repo) needs no config name
    assert meta["configs"][0]["data_files"] == [{"split": k, "path": f"data/{k}-*.parquet"} for k in kinds]
    assert meta["configs"][1]["data_files"] == [{"split": "train", "path": "data/reproduction-*.parquet"}]
    assert meta["trailforge"]["params_sha256"] == "f" * 64 and meta["trailforge"]["set"] == "release"
    assert "dirty" not in text and "c" * 40 not in text and "f" * 64 in text  # no commit: see card.py
    assert "<script>" not in body and "&lt;script&gt;" in body
    for file, *_ in PLOTS:
        assert f"(report/{file})" in body


def _chromium() -> str:
    found = shutil.which("chromium") or shutil.which("chromium-browser")
    if not found:
        pytest.skip("chromium is not installed: apt-get install -y chromium (CI: bash .ci/chromium-setup.sh)")
    return found


def _run_chromium(browser: str, profile: Path, *args: str) -> str:
    done = subprocess.run([browser, "--headless", "--no-sandbox", "--disable-gpu", "--disable-dev-shm-usage",
                           f"--user-data-dir={profile}", "--hide-scrollbars", "--virtual-time-budget=10000", *args],
                          capture_output=True, text=True, timeout=180)
    assert done.returncode == 0, done.stderr[-2000:]
    return done.stdout


# Added to a copy of the page only: after load, writes what each image decoded to into the DOM.
IMAGE_PROBE = ("<script>window.addEventListener('load', () => { const probe = document.createElement('pre'); "
               "probe.id = 'image-probe'; probe.textContent = JSON.stringify([...document.images].map(i => "
               "({src: i.getAttribute('src'), width: i.naturalWidth, height: i.naturalHeight}))); "
               "document.body.appendChild(probe); });</script>")


def test_the_html_report_shows_its_tables_and_images_in_chromium(tmp_path):
    browser = _chromium()
    page = _write(tmp_path / "release")["report"]
    probe_page = page.with_name("probe.html")
    probe_page.write_text(page.read_text(encoding="utf-8").replace("</body>", IMAGE_PROBE + "</body>"), encoding="utf-8")

    dom = _run_chromium(browser, tmp_path / "profile", "--dump-dom", probe_page.as_uri())
    for table_id in TABLE_IDS:
        assert f'<table id="{table_id}">' in dom, f"table {table_id} missing from the rendered page"
    assert "<td>mutant_fails</td>" in dom and "https://example.org/meadow.git" in dom
    probe = json.loads(re.search(r'<pre id="image-probe">(.*?)</pre>', dom, re.S).group(1).replace("&quot;", '"'))
    assert [image["src"] for image in probe] == [file for file, *_ in PLOTS]
    assert all(image["width"] == 800 and image["height"] == 450 for image in probe), f"an image did not load: {probe}"
    # The hostile reject message is shown as text: no element came out of it and the title is untouched.
    assert dom.count("<img ") == len(PLOTS) and "<title>tiny-release" in dom
    assert "&lt;script&gt;document.title" in dom

    shot = tmp_path / "page.png"
    _run_chromium(browser, tmp_path / "profile", "--window-size=1200,3000", f"--screenshot={shot}", page.as_uri())
    import matplotlib.image

    pixels = matplotlib.image.imread(str(shot))[..., :3].reshape(-1, 3)
    colours = {tuple(p) for p in (pixels[::37] * 255).astype(int).tolist()}
    assert len(colours) > 50, "the screenshot is blank or nearly so"
