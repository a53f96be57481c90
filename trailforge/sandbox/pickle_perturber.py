"""Scale the floating-point numbers inside pickled data files, inside the sandbox.

Run as ``python .tf_perturb_pickles.py SEED JITTER PATH...`` in a scratch folder holding the files, with the
program's own environment (a pickled DataFrame needs the pandas that wrote it). Each file is unpickled, every
float it holds is multiplied by ``1 + u`` with ``u`` uniform in ``[-JITTER, JITTER]`` (Python floats, numpy
float arrays and scalars, the float columns of pandas DataFrames and float Series, inside dicts, lists and
tuples), and the file is written back in the pickle protocol it had. Whole numbers, strings, indexes and
objects of other types are left as they were: they are identifiers and structure, not measurements.

Unpickling runs code the file names, which is why this happens here and never on the host: a repository's
pickle is as hostile as its scripts. Prints one JSON line: the paths rewritten and, for the others, why not.
Standard library only at the top; numpy is imported only when an object holds numpy values.
"""
import json
import pickle
import random
import sys

MAX_DEPTH = 40


def _factors(rng, count, jitter):
    return [1.0 + rng.uniform(-jitter, jitter) for _ in range(count)]


def _numpy_float_array(obj):
    kind = getattr(getattr(obj, "dtype", None), "kind", None)
    return kind == "f" and hasattr(obj, "shape") and type(obj).__name__ == "ndarray"


def _scaled_array(array, rng, jitter):
    import numpy

    noise = numpy.asarray(_factors(rng, int(array.size), jitter), dtype=float).reshape(array.shape)
    return (array * noise).astype(array.dtype)


def scaled(obj, rng, jitter, depth=0):
    """``obj`` with its floats scaled; the same object (not a copy) when nothing in it is a float."""
    if depth > MAX_DEPTH or obj is None or isinstance(obj, (bool, int, str, bytes)):
        return obj
    if isinstance(obj, float):
        return obj * _factors(rng, 1, jitter)[0]
    type_name, module = type(obj).__name__, type(obj).__module__ or ""
    if module.startswith("numpy"):
        if _numpy_float_array(obj):
            return _scaled_array(obj, rng, jitter)
        if type_name.startswith("float") or type_name == "longdouble":  # a numpy scalar (float32 is no float)
            return type(obj)(float(obj) * _factors(rng, 1, jitter)[0])
        return obj
    if module.startswith("pandas") and type_name == "DataFrame":
        out = obj.copy()
        for i in range(out.shape[1]):
            column = out.iloc[:, i]
            if getattr(column.dtype, "kind", None) == "f":
                out.iloc[:, i] = _scaled_array(column.to_numpy(), rng, jitter)
        return out
    if module.startswith("pandas") and type_name == "Series":
        if getattr(obj.dtype, "kind", None) != "f":
            return obj
        out = obj.copy()
        out[:] = _scaled_array(obj.to_numpy(), rng, jitter)
        return out
    if isinstance(obj, dict):
        out = obj.copy()
        for key in list(obj):
            out[key] = scaled(obj[key], rng, jitter, depth + 1)
        return out
    if isinstance(obj, list):
        return [scaled(item, rng, jitter, depth + 1) for item in obj]
    if isinstance(obj, tuple):
        items = [scaled(item, rng, jitter, depth + 1) for item in obj]
        return type(obj)(*items) if hasattr(obj, "_fields") else type(obj)(items)
    return obj


def main(argv):
    seed, jitter, paths = int(argv[1]), float(argv[2]), argv[3:]
    rng = random.Random(seed)
    report = {"rewritten": [], "kept": {}}
    for path in sorted(paths):
        try:
            with open(path, "rb") as fh:
                raw = fh.read()
            protocol = raw[1] if raw[:1] == b"\x80" else 2
            obj = pickle.loads(raw)
            new = pickle.dumps(scaled(obj, rng, jitter), protocol=protocol)
        except Exception as exc:  # a file that does not load here stays as it was, with the reason
            report["kept"][path] = f"{type(exc).__name__}: {str(exc)[:200]}"
            continue
        if new == raw:
            report["kept"][path] = "holds no floating-point number"
            continue
        with open(path, "wb") as fh:
            fh.write(new)
        report["rewritten"].append(path)
    print(json.dumps(report, sort_keys=True))


if __name__ == "__main__":
    main(sys.argv)
