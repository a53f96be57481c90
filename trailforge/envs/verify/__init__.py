"""Execution-based verification of one task: a chain of checks, the first failure rejects.

1. data integrity   every workspace file exists with the hash recorded at snapshot time;
2. executability    the reference program runs cleanly on the workspace alone;
3. reproducibility  ``verifier.repeats`` independent runs give the same answer fields,
                    with numbers within ``verifier.max_rel_spread``; tolerances are
                    calibrated from that spread and from the printed precision;
4. gradability      the standalone eval accepts every reference run and every answer the
                    statement allows (rounded as stated, 3.0 for 3, keys in another order, ...),
                    and rejects at least ``verifier.min_wrong_rejected`` plausible wrong
                    answers (and accepts none);
5. controls         the eval rejects the output of every negative program of the task (the
                    defective program of a Correction, the program with the hole of a
                    Completion, the cut-short slice of a Subflow);
6. isolation        neither the statement nor the workspace reveals the answer, the values it
                    is derived from, the removed code or the fix.

Reference runs go through the content-addressed cache independently of every verifier
threshold, so changing a threshold re-grades without re-executing programs.

The chain is ``checks``; the tolerances and the expected document ``tolerances``; the answers the eval must
accept or reject, and the runs of the eval, ``controls``; what a task must not give away ``leaks``; what it
must state ``specified``.
"""
from .checks import check_data_integrity, check_reproducible, verify_task
from .controls import (allowed_answers, answer_bytes, check_gradable, check_negative_program, check_symptoms,
                       run_answer, run_eval, wrong_answers)
from .leaks import check_construction, check_isolation, leak_needles, selects_a_value, significant_forms
from .rejected import Rejected
from .specified import check_specified, unstated_choices, unstated_numbers
from .tolerances import calibrate, element_resolutions, element_spreads, expected_document, printed_tables

__all__ = [
    "Rejected", "allowed_answers", "answer_bytes", "calibrate", "check_construction", "check_data_integrity",
    "check_gradable", "check_isolation", "check_negative_program", "check_reproducible", "check_specified",
    "check_symptoms", "element_resolutions", "element_spreads", "expected_document", "leak_needles", "printed_tables",
    "run_answer", "run_eval", "selects_a_value", "significant_forms", "unstated_choices", "unstated_numbers",
    "verify_task", "wrong_answers",
]
