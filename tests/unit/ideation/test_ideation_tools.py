import json
import os
import pickle
import threading
import time
from datetime import date

import pytest
from conftest import PROJECT_ROOT

from trailforge.ideation.corpus import LiteratureIndex, read_jsonl_corpus
from trailforge.ideation.tools import (
    TOOL_NAMES,
    TOOL_SCHEMAS,
    ArxivAPIBackend,
    ArxivAPIError,
    ResearchSession,
    ToolLimits,
    parse_arxiv_atom,
)

CUTOFF = date(2023, 12, 31)


@pytest.fixture(scope="module")
def index():
    papers, _ = read_jsonl_corpus(PROJECT_ROOT / "examples" / "ideation" / "corpus.jsonl")
    return LiteratureIndex(papers)


@pytest.fixture
def session(index, tmp_path):
    return ResearchSession(index, CUTOFF, tmp_path / "workspace")


# ------------------------------------------------------------------------------------------------ schemas

def test_the_seven_schemas_are_openai_function_tools_with_object_parameters():
    assert [s["function"]["name"] for s in TOOL_SCHEMAS] == list(TOOL_NAMES) == [
        "WebSearch", "Scraper", "View", "Write", "Edit", "Glob", "Grep"]
    json.dumps(TOOL_SCHEMAS)  # serialisable as sent to an API
    for schema in TOOL_SCHEMAS:
        assert schema["type"] == "function" and set(schema["function"]) == {"name", "description", "parameters"}
        params = schema["function"]["parameters"]
        assert params["type"] == "object" and params["required"]
        assert set(params["required"]) <= set(params["properties"])
        for prop in params["properties"].values():
            assert prop["type"] in {"string", "integer"} and prop["description"]


# ------------------------------------------------------------------------------------------------ arguments

@pytest.mark.parametrize("name, arguments, expected", [
    ("WebSearch", "{not json", "not valid JSON"),
    ("WebSearch", "[1, 2]", "must be a JSON object"),
    ("WebSearch", {}, "needs the field(s) query"),
    ("WebSearch", {"query": 3}, "WebSearch.query must be a JSON string"),
    ("WebSearch", {"query": "x", "max_results": True}, "max_results must be a JSON integer"),
    ("WebSearch", {"query": "x", "colour": "red"}, "has no field(s) colour"),
    ("Edit", {"path": "a.md"}, "needs the field(s) old_string, new_string"),
    ("Browse", {"url": "x"}, "unknown tool 'Browse'"),
])
def test_malformed_calls_come_back_as_error_observations(session, name, arguments, expected):
    result = session.run(name, arguments)
    assert not result.ok and result.text.startswith("Error:") and expected in result.text


def test_arguments_may_arrive_as_a_json_string(session):
    text = session.call("WebSearch", json.dumps({"query": "ocean mixed layer heat uptake", "max_results": 3}))
    assert len(json.loads(text)["results"]) == 3


# ------------------------------------------------------------------------------------------------ literature

def test_web_search_shows_id_title_url_date_snippet_and_records_what_was_seen(session):
    result = session.run("WebSearch", {"query": "protein language model fitness prediction", "max_results": 5})
    assert result.ok
    results = json.loads(result.text)["results"]
    assert len(results) == 5
    assert set(results[0]) == {"id", "title", "url", "date", "snippet"}
    assert all(date.fromisoformat(r["date"]) <= CUTOFF for r in results)
    assert {r["title"] for r in results} <= session.seen_titles
    assert {r["url"] for r in results} <= session.seen_urls
    assert {r["url"].rsplit("/", 1)[-1] for r in results} == {r["id"] for r in results} == session.observed_paper_ids


def test_web_search_results_are_capped_and_never_after_the_cutoff(index, tmp_path):
    limits = ToolLimits(max_results=4)
    early = ResearchSession(index, date(2020, 6, 30), tmp_path, limits)
    results = json.loads(early.call("WebSearch", {"query": "heat uptake fitness carbon protein", "max_results": 20}))
    assert 0 < len(results["results"]) <= 4
    assert all(r["date"] <= "2020-06-30" for r in results["results"])
    nothing = json.loads(early.call("WebSearch", {"query": "quasar redshift"}))
    assert nothing["results"] == []


def test_scraper_refuses_unseen_urls_and_serves_seen_ones(index, tmp_path):
    session = ResearchSession(index, date(2025, 1, 1), tmp_path)
    url = "https://example.org/papers/oml-010"
    refused = session.run("Scraper", {"url": url})
    assert not refused.ok and "has not appeared" in refused.text

    results = json.loads(session.call("WebSearch", {"query": "biases mixed-layer depth climate models heat uptake"}))
    assert url in {r["url"] for r in results["results"]}
    page = session.run("Scraper", {"url": url.replace("https://", "http://") + "/"})  # the same page
    assert page.ok
    assert page.text.startswith("Title: Biases in mixed-layer depth across climate models")
    assert "Authors: Sigrid Halvorsen, Diego Ferraz" in page.text and "Date: 2024-01-30" in page.text
    assert "Abstract:" in page.text and "Full text:" in page.text


def test_a_url_quoted_inside_a_scraped_page_becomes_openable(index, tmp_path):
    session = ResearchSession(index, date(2025, 1, 1), tmp_path)
    cited = "https://example.org/papers/oml-003"  # quoted in the full text of oml-010
    results = json.loads(session.call("WebSearch", {"query": "biases mixed-layer depth climate models",
                                                    "max_results": 1}))
    assert [r["url"] for r in results["results"]] == ["https://example.org/papers/oml-010"]
    assert not session.run("Scraper", {"url": cited}).ok
    page = session.call("Scraper", {"url": "https://example.org/papers/oml-010"})
    assert cited in page and cited in session.seen_urls
    assert session.run("Scraper", {"url": cited}).text.startswith("Title: Ocean heat uptake efficiency")
    assert "oml-003" in session.observed_paper_ids


def test_a_seen_url_of_a_paper_after_the_cutoff_is_not_served(index, tmp_path):
    session = ResearchSession(index, date(2021, 12, 31), tmp_path)
    later = "https://example.org/papers/plm-010"  # dated 2024
    session.seen_urls.add(later)  # as if a page had quoted it
    result = session.run("Scraper", {"url": later})
    assert not result.ok and "no page is available" in result.text


def test_a_url_typed_into_the_query_does_not_become_seen(session):
    typed = "https://example.org/papers/soc-004"
    text = session.call("WebSearch", {"query": f"{typed} quasar"})
    assert typed not in text and typed not in session.seen_urls
    assert not session.run("Scraper", {"url": typed}).ok


def test_observations_are_bounded(index, tmp_path):
    session = ResearchSession(index, CUTOFF, tmp_path, ToolLimits(max_observation_chars=200))
    text = session.call("WebSearch", {"query": "heat uptake"})
    assert len(text) < 260 and "more characters not shown" in text


# ------------------------------------------------------------------------------------------------ workspace

def test_write_view_and_edit_a_file(session):
    assert session.run("Write", {"path": "notes/claim_audit.md", "content": "# Claims\nline two\nline three\n"}).ok
    view = session.call("View", {"path": "notes/claim_audit.md"})
    assert view.splitlines()[1] == "     2\tline two"
    assert session.call("View", {"path": "notes/claim_audit.md", "offset": 3, "limit": 1}).strip().startswith("3\t")
    assert "claim_audit.md" in session.call("View", {"path": "notes"})

    assert session.run("Edit", {"path": "notes/claim_audit.md", "old_string": "line two",
                                "new_string": "the second line"}).ok
    assert (session.workspace / "notes" / "claim_audit.md").read_text() == "# Claims\nthe second line\nline three\n"

    repeated = session.run("Edit", {"path": "notes/claim_audit.md", "old_string": "line", "new_string": "row"})
    assert not repeated.ok and "occurs 2 times" in repeated.text
    absent = session.run("Edit", {"path": "notes/claim_audit.md", "old_string": "zebra", "new_string": "x"})
    assert not absent.ok and "does not occur" in absent.text
    missing = session.run("Edit", {"path": "nope.md", "old_string": "a", "new_string": "b"})
    assert not missing.ok and "no file" in missing.text


def test_file_system_failures_are_observations_too(session):
    session.call("Write", {"path": "a.md", "content": "text"})
    result = session.run("Write", {"path": "a.md/inside.md", "content": "x"})
    assert not result.ok and result.text.startswith("Error: Write failed")
    assert str(session.workspace) not in result.text


def test_write_refuses_oversized_content(index, tmp_path):
    session = ResearchSession(index, CUTOFF, tmp_path, ToolLimits(max_file_chars=10))
    result = session.run("Write", {"path": "a.md", "content": "x" * 11})
    assert not result.ok and "limit is 10" in result.text and not (tmp_path / "a.md").exists()


@pytest.mark.parametrize("path", ["/etc/passwd", "../outside.md", "notes/../../outside.md", "~/x.md", "",
                                  "C:\\Windows\\x", "link_out/secret.txt", "link_out"])
def test_workspace_tools_refuse_paths_that_leave_the_workspace(index, tmp_path, path):
    outside = tmp_path / "outside"
    outside.mkdir()
    (outside / "secret.txt").write_text("do not read")
    workspace = tmp_path / "ws"
    workspace.mkdir()
    os.symlink(outside, workspace / "link_out")
    session = ResearchSession(index, CUTOFF, workspace)

    for name, args in [("View", {"path": path}), ("Write", {"path": path, "content": "x"}),
                       ("Edit", {"path": path, "old_string": "do", "new_string": "x"})]:
        result = session.run(name, args)
        assert not result.ok and result.text.startswith("Error:"), (name, path)
    assert (outside / "secret.txt").read_text() == "do not read"
    assert not (tmp_path / "outside.md").exists()


def test_glob_and_grep_stay_inside_the_workspace(index, tmp_path):
    outside = tmp_path / "outside"
    outside.mkdir()
    (outside / "secret.md").write_text("hypothesis: hidden\n")
    workspace = tmp_path / "ws"
    session = ResearchSession(index, CUTOFF, workspace)
    os.symlink(outside / "secret.md", workspace / "linked.md")
    session.call("Write", {"path": "synthesis.md", "content": "tension A\nhypothesis: mixing depth\n"})
    session.call("Write", {"path": "ideas/idea_candidates.md", "content": "idea 1\nHypothesis: none\n"})

    assert session.call("Glob", {"pattern": "*.md"}) == "synthesis.md"
    assert session.call("Glob", {"pattern": "**/*.md"}).splitlines() == ["ideas/idea_candidates.md", "synthesis.md"]
    assert "No workspace paths" in session.call("Glob", {"pattern": "*.txt"})
    assert not session.run("Glob", {"pattern": "../*"}).ok
    assert not session.run("Glob", {"pattern": "/etc/*"}).ok

    assert session.call("Grep", {"pattern": "hypothesis"}) == "synthesis.md:2: hypothesis: mixing depth"
    assert session.call("Grep", {"pattern": "(?i)hypothesis", "path_glob": "ideas/*.md"}) == \
        "ideas/idea_candidates.md:2: Hypothesis: none"
    assert "No matches" in session.call("Grep", {"pattern": "zebra"})
    bad = session.run("Grep", {"pattern": "(unclosed"})
    assert not bad.ok and "bad regular expression" in bad.text


def test_grep_stops_at_its_match_limit(index, tmp_path):
    session = ResearchSession(index, CUTOFF, tmp_path, ToolLimits(max_grep_matches=3))
    session.call("Write", {"path": "a.md", "content": "x\n" * 10})
    lines = session.call("Grep", {"pattern": "x"}).splitlines()
    assert lines[:3] == ["a.md:1: x", "a.md:2: x", "a.md:3: x"] and "stopped after 3" in lines[3]


# ------------------------------------------------------------------------------------------------ arXiv

ATOM = """<?xml version="1.0" encoding="UTF-8"?>
<feed xmlns="http://www.w3.org/2005/Atom">
  <title>ArXiv Query</title>
  <entry>
    <id>http://arxiv.org/abs/2101.01234v2</id>
    <published>2021-01-05T18:00:00Z</published>
    <updated>2021-03-01T10:00:00Z</updated>
    <title>Mixed layer
      heat uptake</title>
    <summary>  We study
      the mixed layer. </summary>
    <author><name>A. Moreau</name></author>
    <author><name>K. Asante</name></author>
  </entry>
  <entry>
    <id>http://arxiv.org/abs/hep-th/9901001v1</id>
    <published>1999-01-01T00:00:00Z</published>
    <title>Old</title>
    <summary>Strings.</summary>
    <author><name>X. Y</name></author>
  </entry>
</feed>"""


def test_arxiv_atom_feed_parses_into_papers():
    first, old = parse_arxiv_atom(ATOM)
    assert first.paper_id == "2101.01234" and first.url == "https://arxiv.org/abs/2101.01234"
    assert first.title == "Mixed layer heat uptake" and first.abstract == "We study the mixed layer."
    assert first.authors == ["A. Moreau", "K. Asante"] and first.date == date(2021, 1, 5)
    assert old.paper_id == "hep-th/9901001"


def test_arxiv_error_feeds_and_garbage_raise_a_named_error():
    error_feed = ATOM.replace("http://arxiv.org/abs/2101.01234v2", "http://arxiv.org/api/errors#bad_query")
    with pytest.raises(ArxivAPIError):
        parse_arxiv_atom(error_feed)
    with pytest.raises(ArxivAPIError, match="not an Atom feed"):
        parse_arxiv_atom("<html>")
    assert ArxivAPIBackend().get_by_url("https://arxiv.org/abs/2101.01234") is None  # no request made


REQUEST_MOMENTS: list[float] = []


def _recording_fetch(url, timeout):  # module level, so the backend holding it pickles
    REQUEST_MOMENTS.append(time.monotonic())
    return ATOM


def test_arxiv_requests_from_several_threads_keep_the_interval_and_the_backend_pickles():
    moments = REQUEST_MOMENTS
    moments.clear()
    backend = ArxivAPIBackend(min_interval_s=0.2, fetch=_recording_fetch)
    threads = [threading.Thread(target=backend.search, args=("mixed layer", date(2022, 1, 1))) for _ in range(3)]
    for thread in threads:
        thread.start()
    for thread in threads:
        thread.join()
    gaps = [b - a for a, b in zip(sorted(moments), sorted(moments)[1:])]
    assert len(moments) == 3 and min(gaps) >= 0.19
    copy = pickle.loads(pickle.dumps(backend))  # what an executor=ray worker receives
    assert copy.get_by_url("https://arxiv.org/abs/2101.01234").title == "Mixed layer heat uptake"
    copy.search("mixed layer", date(2022, 1, 1))


def test_a_bracketed_id_from_a_search_result_is_grounded_even_when_the_url_does_not_hold_it(tmp_path):
    from trailforge.ideation.qc import CaseContext, check_trajectory
    from trailforge.ideation.corpus import Paper

    paper = Paper(paper_id="moreau2021", title="Mixed layer heat uptake in a warming ocean", abstract="Heat uptake.",
                  authors=["A. Moreau"], date=date(2021, 1, 5), url="https://example.org/doi/10.1/xyz")
    session = ResearchSession(LiteratureIndex([paper]), date(2022, 1, 1), tmp_path)
    observation = session.call("WebSearch", {"query": "mixed layer heat uptake"})
    call = {"id": "c0", "type": "function", "function": {"name": "WebSearch",
                                                           "arguments": json.dumps({"query": "mixed layer heat uptake"})}}
    messages = [{"role": "system", "content": "Cutoff 2022-01-01."}, {"role": "user", "content": "Study heat uptake."},
                {"role": "assistant", "content": "", "tool_calls": [call]},
                {"role": "tool", "tool_call_id": "c0", "name": "WebSearch", "content": observation},
                {"role": "assistant", "content": "Heat uptake is well studied [moreau2021]; see also [nobody2020]."}]
    report = check_trajectory(messages, CaseContext(turn_stages=["evidence", "evidence"]))
    assert [(f.code, f.reason.split("'")[1]) for f in report.failures] == [("unobserved_citation", "nobody2020")]
