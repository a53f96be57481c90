"""Perturbing data files so that the program still reads them: formats, headers and identifiers kept."""
from __future__ import annotations

import io
import random

import numpy as np
import pandas as pd

from trailforge.envs.dependence import drop_rows, is_fasta, moved_fields, perturb_fasta, perturb_files, perturb_text
from trailforge.io import AnswerField

CSV = "time,T_K,count,date,id\n0.25,293.15,120,2020-01-05,7\n1.50,294.20,131,2020-01-06,8\n"


def test_decimal_numbers_move_and_keep_their_format():
    out = perturb_text(CSV, random.Random(0), 0.1)
    frame, original = pd.read_csv(io.StringIO(out)), pd.read_csv(io.StringIO(CSV))
    assert list(frame.columns) == list(original.columns)
    assert (frame["T_K"] != original["T_K"]).all()
    assert all(len(v.split(".")[1]) == 2 for v in out.splitlines()[1].split(",")[:2])
    assert ((frame["T_K"] / original["T_K"] - 1).abs() <= 0.1 + 1e-3).all()


def test_dates_small_codes_and_header_are_kept():
    out = perturb_text(CSV, random.Random(0), 0.1)
    frame = pd.read_csv(io.StringIO(out))
    assert list(frame["date"]) == ["2020-01-05", "2020-01-06"]
    assert list(frame["id"]) == [7, 8]
    assert out.splitlines()[0] == "time,T_K,count,date,id"


def test_counts_move_unless_integers_are_off():
    moved = pd.read_csv(io.StringIO(perturb_text(CSV, random.Random(3), 0.1)))
    kept = pd.read_csv(io.StringIO(perturb_text(CSV, random.Random(3), 0.1, integers=False)))
    assert list(moved["count"]) != [120, 131]
    assert list(kept["count"]) == [120, 131]


def test_scientific_notation_keeps_its_exponent():
    out = perturb_text("k\n2.50e-03\n", random.Random(1), 0.1)
    value = out.splitlines()[1]
    assert value.endswith("e-03") and value != "2.50e-03"
    assert abs(float(value) / 2.5e-3 - 1) <= 0.11


def test_numbers_inside_words_times_and_versions_are_kept():
    text = "sample x12 at 12:30 with v3.5.2 from run_07\n"
    assert perturb_text(text, random.Random(0), 0.1) == text


def test_dropping_rows_keeps_header_comments_and_order():
    text = "a,b\n# comment\n" + "".join(f"{i},{i * 2}\n" for i in range(20))
    out = drop_rows(text, random.Random(0), 0.15)
    lines = out.splitlines()
    assert lines[:2] == ["a,b", "# comment"]
    assert len(lines) == 22 - 3
    values = [int(line.split(",")[0]) for line in lines[2:]]
    assert values == sorted(values)
    assert drop_rows("a\n1\n2\n", random.Random(0), 0.5) == "a\n1\n2\n"  # too few rows to drop any


def test_small_counts_move_only_when_asked():
    text = "species,count\na,5\nb,3\nc,4\n"
    assert perturb_text(text, random.Random(0), 0.1) == text
    moved = perturb_text(text, random.Random(0), 0.1, integers="all").splitlines()[1:]
    assert all(abs(int(new.split(",")[1]) - int(old.split(",")[1])) == 1
               for new, old in zip(moved, text.splitlines()[1:]))


def test_npy_arrays_of_floats_are_scaled_and_binary_files_kept():
    buffer = io.BytesIO()
    np.save(buffer, np.linspace(1, 2, 10))
    data = {"arr.npy": buffer.getvalue(), "img.png": b"\x89PNG\r\n\x1a\n\x00\x00"}
    out, changed = perturb_files(data, seed=5)
    assert changed == ["arr.npy"]
    assert out["img.png"] == data["img.png"]
    scaled = np.load(io.BytesIO(out["arr.npy"]))
    assert scaled.shape == (10,) and not np.allclose(scaled, np.linspace(1, 2, 10))


def test_same_seed_same_perturbation():
    data = {"a.csv": CSV.encode()}
    assert perturb_files(data, seed=9) == perturb_files(data, seed=9)
    assert perturb_files(data, seed=9)[0] != perturb_files(data, seed=10)[0]


def test_moved_fields_splits_by_the_comparison_given():
    schema = [AnswerField(name=n, type="number", label=n, source="stdout") for n in ("a", "b", "c")]
    moved, still = moved_fields(schema, {"a": 1.0, "b": 2.0, "c": 3.0}, {"a": 1.5, "b": 2.0},
                                lambda f, ref, got: None if ref == got else "moved")
    assert [f.name for f in moved] == ["a", "c"]  # c is missing from the perturbed run: it depends on the data
    assert [f.name for f in still] == ["b"]


def test_binary_files_of_one_format_are_rotated_among_their_paths():
    """Eight MATLAB files of a real behavioural lab (zoharbnh5): nothing can edit them without scipy, so the
    last try gives each path the contents of the next file; a lone binary file stays unperturbable."""
    mats = {f"C{i}_new.mat": b"MATLAB 5.0 MAT-file\x00" + bytes([i]) * 8 for i in range(3)}
    data = {**mats, "notes.txt": b"trial,score\n1,0.5\n", "lone.xlsx": b"PK\x03\x04\x00xl"}
    out, changed = perturb_files(data, 1, rotate=True)
    assert changed == sorted(mats)
    assert sorted(out[p] for p in mats) == sorted(mats.values()), "the same files, at other paths"
    assert out["notes.txt"] == data["notes.txt"] and out["lone.xlsx"] == data["lone.xlsx"]
    assert perturb_files({"lone.xlsx": data["lone.xlsx"]}, 1, rotate=True)[1] == []
    twins = {"a.mat": b"\x00same", "b.mat": b"\x00same"}
    assert perturb_files(twins, 1, rotate=True)[1] == [], "identical contents: rotating moves nothing"


FASTA = ">chr1 sample 12\nATGGGCCGCATTAGCGGGCTAACG\nggcttaac\n>chr2\nTTGACCCATGGAACTTTAGCAGGT\n"


def test_a_fasta_file_gets_substitutions_and_keeps_its_headers_and_line_lengths():
    """Before, a FASTA file had nothing to perturb (no numbers), so a GC-content script was data_not_perturbable."""
    out, changed = perturb_files({"genome/sample.fasta": FASTA.encode()}, seed=3, jitter=0.2)
    assert changed == ["genome/sample.fasta"]
    new = out["genome/sample.fasta"].decode()
    old_lines, new_lines = FASTA.splitlines(), new.splitlines()
    assert [l for l in new_lines if l.startswith(">")] == [">chr1 sample 12", ">chr2"]  # the 12 is not scaled
    assert [len(l) for l in new_lines] == [len(l) for l in old_lines]
    assert set(new.replace("\n", "")) - set(">chr12 sample") <= set("ACGTacgt")
    assert new_lines[2].islower()  # case kept
    substituted = sum(a != b for a, b in zip(FASTA, new))
    assert 0 < substituted < len(FASTA) // 3


def test_protein_fasta_stays_protein_and_other_text_is_no_fasta():
    protein = ">sp|P69905|HBA\nMVLSPADKTNVKAAWGKVGAHAGEYGAEALERMFLSFPTTKTYFPHF\n"
    new = perturb_fasta(protein, random.Random(1), 0.3)
    assert new != protein and set(new.splitlines()[1]) <= set("ACDEFGHIKLMNPQRSTVWY")
    assert is_fasta(protein) and not is_fasta("time,value\n1,2\n") and not is_fasta("> note\n1.5 2.5\n")
