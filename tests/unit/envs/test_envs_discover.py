"""Unit: discover labels listed repositories with a discipline and filters only search candidates."""
from __future__ import annotations

import subprocess

import pytest

from conftest import PROJECT_ROOT, make_repo
from trailforge.config import compose, validate
from trailforge.config.schema import DomainConfig, RepoEntry
from trailforge.envs.discover import UNKNOWN_DISCIPLINE, discover, folder_entries
from trailforge.io import StageRecorder

# Real-looking research code whose README and file names use none of the domain's words.
PLAIN = {
    "README.md": "Scripts for the lab course, week 3.\n",
    "analyse.py": "import csv\nrows = list(csv.DictReader(open('runs.csv')))\nprint('Rows:', len(rows))\n",
    "runs.csv": "a,b\n1,2\n",
}


def _domain(**changes) -> DomainConfig:
    data = compose("demo", root=PROJECT_ROOT)["domain"]
    data.update(changes)
    return DomainConfig(**data)


def _run(entries, domain, root, searched=False):
    recorder = StageRecorder("discover")
    rows = discover(entries, domain, root, 100, recorder, searched=searched)
    return rows, {(r.item_id, r.reason) for r in recorder.rejects}, recorder


def _git(path, files):
    make_repo(path, files)
    for cmd in (["init", "-q", "-b", "main"], ["add", "-A"],
                ["-c", "user.name=t", "-c", "user.email=t@t", "commit", "-qm", "init"]):
        subprocess.run(["git", *cmd], cwd=path, check=True, capture_output=True)
    return path


def test_a_listed_repository_without_vocabulary_is_kept_as_unknown(tmp_path):
    make_repo(tmp_path / "lab-week3", PLAIN)
    rows, rejects, recorder = _run([RepoEntry(path="lab-week3")], _domain(), tmp_path)
    assert rejects == set()
    assert [(r.repo_id, r.discipline) for r in rows] == [("lab-week3", UNKNOWN_DISCIPLINE)]
    assert set(rows[0].discipline_scores.values()) == {0}
    assert recorder.counters["discipline_unknown"] == 1


def test_a_listed_git_url_without_vocabulary_is_kept_as_unknown(tmp_path):
    origin = _git(tmp_path / "git" / "lab-week3", PLAIN)
    rows, rejects, _ = _run([RepoEntry(url=str(origin))], _domain(), tmp_path)
    assert rejects == set() and [r.discipline for r in rows] == [UNKNOWN_DISCIPLINE]
    assert rows[0].origin_kind == "git"


def test_domain_filters_do_not_gate_listed_repositories(tmp_path):
    make_repo(tmp_path / "sky", {"README.md": "Stellar photometry of a galaxy field.\n", "fit.py": "print(1)\n"})
    strict = _domain(allowed=["ecology"], filters={"require_data": True, "require_paper": True,
                                                   "min_python_files": 3})
    rows, rejects, _ = _run([RepoEntry(path="sky")], strict, tmp_path)
    assert rejects == set()
    assert [(r.repo_id, r.discipline, r.has_paper) for r in rows] == [("sky", "astronomy", False)]


def test_a_listed_repository_with_no_python_cannot_be_mined(tmp_path):
    make_repo(tmp_path / "sheets", {"README.md": "Species abundance tables.\n", "counts.csv": "a\n1\n"})
    rows, rejects, _ = _run([RepoEntry(path="sheets")], _domain(), tmp_path)
    assert rows == [] and rejects == {("sheets", "no_python")}


@pytest.mark.parametrize("files, changes, reason", [
    (PLAIN, {}, "no_discipline"),
    ({**PLAIN, "README.md": "Stellar photometry of a galaxy field.\n"}, {"allowed": ["ecology"]}, "off_domain"),
    ({"README.md": "Species abundance notes.\n", "plot.py": "print(1)\n"}, {}, "no_data_files"),
    ({**PLAIN, "README.md": "Species abundance notes.\n"},
     {"filters": {"require_data": True, "require_paper": True, "min_python_files": 1}}, "no_paper"),
])
def test_search_candidates_are_filtered(tmp_path, files, changes, reason):
    origin = _git(tmp_path / "git" / "candidate", files)
    rows, rejects, _ = _run([RepoEntry(url=str(origin))], _domain(**changes), tmp_path, searched=True)
    assert rows == [] and rejects == {("candidate", reason)}


def test_a_search_candidate_that_fits_is_kept(tmp_path):
    origin = _git(tmp_path / "git" / "meadow", {**PLAIN, "README.md": "Quadrat species abundance survey.\n"})
    rows, rejects, _ = _run([RepoEntry(url=str(origin))], _domain(), tmp_path, searched=True)
    assert rejects == set() and [r.discipline for r in rows] == ["ecology"]


def test_the_code_names_the_field_when_the_readme_does_not(tmp_path):
    """Real READMEs are often one line; the code says what it measures (hydrogeog/hydro was `unknown`)."""
    make_repo(tmp_path / "hydro", {"README.md": "Some scripts.\n", "runs.csv": "a\n1\n",
                                   "flow.py": "discharge = read('q.csv')\nbase_flow = separate(discharge)\n"
                                              "# baseflow index of the catchment\nprint(base_flow.mean())\n"})
    rows, _, _ = _run([RepoEntry(path="hydro")], _domain(), tmp_path)
    assert rows[0].discipline == "earth_science"
    assert rows[0].discipline_scores["earth_science"] == 4  # discharge x2, baseflow, catchment (`base_flow` is two words)


def test_many_words_of_a_field_outvote_one_word_repeated(tmp_path):
    """An SIR course says `population` on every line; infection, incidence and vaccination say epidemiology."""
    code = "population = 1000\n" * 40 + "infections = incidence * population\nvaccination = 0.3\n"
    make_repo(tmp_path / "sir", {"README.md": "Course notebooks.\n", "sir.py": code})
    rows, _, _ = _run([RepoEntry(path="sir")], _domain(), tmp_path)
    scores = rows[0].discipline_scores
    assert scores["ecology"] == 10 and scores["epidemiology"] == 3  # `population` adds at most 10 ...
    make_repo(tmp_path / "sir2", {"README.md": "SIR model of an epidemic outbreak: transmission, prevalence.\n",
                                  "sir.py": code})
    rows, _, _ = _run([RepoEntry(path="sir2")], _domain(), tmp_path)
    assert rows[0].discipline == "epidemiology"  # ... and the README's own words count three times


def test_the_demo_repositories_keep_their_disciplines():
    data = compose("demo", root=PROJECT_ROOT)
    validate(data)
    entries = [RepoEntry(**e) for e in data["source"]["repos"]]
    rows, rejects, _ = _run(entries, DomainConfig(**data["domain"]), PROJECT_ROOT)
    assert rejects == set()
    assert {r.repo_id: r.discipline for r in rows} == {
        "griess-nitrite-kinetics": "chemistry", "kinase-inhibitor-screen": "pharmacology",
        "meadow-quadrats": "ecology", "pendulum-g-lab": "physics", "phage-contig-survey": "genomics",
        "upland-station-temperature": "earth_science",
    }


def test_a_folder_of_clones_lists_each_subfolder_in_name_order_and_names_what_it_cannot_use(tmp_path):
    clones = tmp_path / "clones"
    for name in ("zeta-lab", "alpha-lab", ".hidden-cache"):
        make_repo(clones / name, PLAIN)
    (clones / "manifest.json").write_text("{}")  # a file beside the clones is not a repository
    (tmp_path / "empty").mkdir()
    entries, problems = folder_entries(["clones", "empty", "nowhere"], tmp_path)
    assert [e.path for e in entries] == ["clones/alpha-lab", "clones/zeta-lab"]
    assert problems == [
        ("empty", "empty_source_folder", "source folder 'empty' holds no repository folder"),
        ("nowhere", "missing_source_path", "source folder 'nowhere' does not exist or is not a folder"),
    ]
