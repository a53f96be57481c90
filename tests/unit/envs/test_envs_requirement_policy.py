"""The requirement policy: a manifest can only make us install named releases from the package index.
Everything else is refused, one named refusal per requirement, and the rest of the manifest still counts."""
from __future__ import annotations

import pytest

from trailforge.envs.deps import (
    REFUSALS, parse_manifest, parse_requirements, requirement_refusal, resolve_distributions, screen_requirements,
)

# One line of each kind a requirements file can hold, with the refusal each must get.
REFUSED = {
    "mypkg @ https://example.org/mypkg-1.0.tar.gz": "direct_url",
    "other @ file:///home/someone/other": "local_path",
    "git+https://github.com/org/repo.git#egg=repo": "vcs",
    "hg+https://hg.example.org/repo": "vcs",
    "svn+https://svn.example.org/repo/trunk": "vcs",
    "bzr+lp:project": "vcs",
    "git@github.com:org/repo.git": "vcs",
    "https://example.org/pkg-1.0.tar.gz": "direct_url",
    "./pkg": "local_path",
    "../sibling": "local_path",
    "/abs/path/to/pkg": "local_path",
    "foo-1.0-py3-none-any.whl": "local_path",
    "foo-1.0.tar.gz": "local_path",
    ".": "local_path",
    "-e .": "editable",
    "--editable git+https://github.com/org/e.git": "editable",
    "-i https://mirror.example/simple": "index_option",
    "--index-url https://mirror.example/simple": "index_option",
    "--extra-index-url https://mirror.example/simple": "index_option",
    "-f https://mirror.example/links": "index_option",
    "--find-links ./wheels": "index_option",
    "--trusted-host mirror.example": "index_option",
    "--no-binary :all:": "pip_option",
    "--pre": "pip_option",
    "-c constraints.txt": "include",
    "-r other.txt": "include",
    "--requirement more.txt": "include",
    "scipy==1.11 --global-option=--fast": "pip_option",
    "not a requirement (x)": "unparseable",
}


def test_only_the_named_releases_survive_and_every_other_line_is_refused_by_name():
    text = "numpy==1.26.4\n" + "\n".join(REFUSED) + "\npandas>=2\n"
    declared = parse_manifest("requirements.txt", text)
    kept, refused = screen_requirements(declared)
    assert kept == ["numpy==1.26.4", "pandas>=2"]
    assert {r.requirement: r.why for r in refused} == REFUSED
    for refusal in refused:
        assert refusal.requirement in refusal.message and REFUSALS[refusal.why] in refusal.message
    distributions, late = resolve_distributions(declared, [], set(), "3.11.7")
    assert distributions == ["numpy==1.26.4", "pandas>=2"]
    assert {r.requirement for r in late} == set(REFUSED), "resolution screens too, whoever calls it"


@pytest.mark.parametrize("spec", [
    "numpy", "numpy==1.26.4", "pandas>=2,<3", "Scikit_Learn[plots]>=1.3", 'numpy==1.26 ; python_version < "3.12"',
    "ruamel.yaml>=0.17", "backports.zoneinfo",
])
def test_named_releases_pass(spec):
    assert requirement_refusal(spec) is None


def test_hash_options_and_continuations_keep_the_named_release():
    text = "scipy==1.11.4 \\\n    --hash=sha256:aaaa \\\n    --hash=sha256:bbbb\nnumpy==1.26.4 --hash=sha256:cccc\n"
    assert parse_requirements(text) == ["scipy==1.11.4", "numpy==1.26.4"]


def test_a_url_fragment_is_not_read_as_a_comment():
    line = "git+https://x.example/r.git#egg=r  # the fork\n"
    assert parse_requirements(line) == ["git+https://x.example/r.git#egg=r"]


def test_other_manifests_are_screened_the_same_way():
    pyproject = '[project]\ndependencies = ["numpy>=1.24", "tool @ git+https://github.com/o/tool.git"]\n'
    env = "dependencies:\n  - numpy=1.26\n  - pip:\n      - -r requirements-extra.txt\n      - seaborn==0.13\n"
    setup_py = "from setuptools import setup\nsetup(install_requires=['pandas>=2', 'lib @ file:///opt/lib'])\n"
    screened = {name: screen_requirements(parse_manifest(name, text))
                for name, text in [("pyproject.toml", pyproject), ("environment.yml", env), ("setup.py", setup_py)]}
    assert {name: (kept, [(r.requirement, r.why) for r in refused]) for name, (kept, refused) in screened.items()} == {
        "pyproject.toml": (["numpy>=1.24"], [("tool @ git+https://github.com/o/tool.git", "vcs")]),
        "environment.yml": (["numpy==1.26", "seaborn==0.13"], [("-r requirements-extra.txt", "include")]),
        "setup.py": (["pandas>=2"], [("lib @ file:///opt/lib", "local_path")]),
    }


@pytest.mark.parametrize("name, text", [
    ("pyproject.toml", '[project]\ndependencies = "numpy"\n'),
    ("environment.yml", "dependencies: numpy\n"),
    ("environment.yml", "- numpy\n"),
])
def test_a_requirement_list_that_is_not_a_list_is_a_bad_manifest_not_one_package_per_letter(name, text):
    with pytest.raises(ValueError, match="must be a"):
        parse_manifest(name, text)


def test_entries_that_are_not_text_are_refused_not_installed_under_their_repr():
    declared = parse_manifest("pyproject.toml", '[project]\ndependencies = ["numpy", 3, {x = 1}]\n')
    kept, refused = screen_requirements(declared)
    assert kept == ["numpy"] and [r.why for r in refused] == ["unparseable", "unparseable"]
