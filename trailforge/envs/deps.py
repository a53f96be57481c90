"""Dependency inference: manifests plus an import scan mapped to distributions."""
from __future__ import annotations

import ast
import functools
import importlib.metadata
import posixpath
import re
import sys
import tomllib
from dataclasses import dataclass

import yaml

from .parsing import UnparseableSource, parse_python

# Import name -> PyPI distribution, where they differ or are easy to get wrong. A name that is
# not here is assumed to be its own distribution (numpy, pandas, scipy...).
IMPORT_TO_DIST = {
    "sklearn": "scikit-learn",
    "skimage": "scikit-image",
    "Bio": "biopython",
    "cv2": "opencv-python-headless",
    "yaml": "PyYAML",
    "PIL": "Pillow",
    "bs4": "beautifulsoup4",
    "dateutil": "python-dateutil",
    "mpl_toolkits": "matplotlib",
    "rdkit": "rdkit",
    "MDAnalysis": "MDAnalysis",
    "netCDF4": "netCDF4",
    "tables": "tables",
    "Levenshtein": "python-Levenshtein",
    "OpenSSL": "pyOpenSSL",
    "jwt": "PyJWT",
    "google": "protobuf",
    "attr": "attrs",
    "pysam": "pysam",
    "statsmodels": "statsmodels",
    "torch": "torch",
    "tensorflow": "tensorflow",
    "astropy": "astropy",
    "anndata": "anndata",
    "scanpy": "scanpy",
    "Crypto": "pycryptodome",
    "docx": "python-docx",
    "pptx": "python-pptx",
    "magic": "python-magic",
    "serial": "pyserial",
    "usb": "pyusb",
    "zmq": "pyzmq",
    "dotenv": "python-dotenv",
    "jose": "python-jose",
    "multipart": "python-multipart",
    "slugify": "python-slugify",
    "git": "GitPython",
    "github": "PyGithub",
    "sqlalchemy": "SQLAlchemy",
    "psycopg2": "psycopg2-binary",
    "MySQLdb": "mysqlclient",
    "fitz": "PyMuPDF",
    "osgeo": "GDAL",
    "ee": "earthengine-api",
    "nx": "networkx",
    "mne": "mne",
    "nibabel": "nibabel",
    "pyBigWig": "pyBigWig",
    "HTSeq": "HTSeq",
    "ete3": "ete3",
    "pybedtools": "pybedtools",
    "Bio.PDB": "biopython",
    "openmm": "openmm",
    "simtk": "openmm",
    "pymatgen": "pymatgen",
    "ase": "ase",
    "spglib": "spglib",
    "healpy": "healpy",
    "lal": "lalsuite",
    "xarray": "xarray",
    "cartopy": "Cartopy",
    "shapely": "shapely",
    "pyproj": "pyproj",
    "geopandas": "geopandas",
    "rasterio": "rasterio",
    "h5py": "h5py",
    "numba": "numba",
    "sympy": "sympy",
    "igraph": "igraph",
    "community": "python-louvain",
    "umap": "umap-learn",
    "hdbscan": "hdbscan",
    "lightgbm": "lightgbm",
    "xgboost": "xgboost",
    "catboost": "catboost",
    "tqdm": "tqdm",
    "pydantic": "pydantic",
    "requests": "requests",
    "lxml": "lxml",
    "ruamel": "ruamel.yaml",
    "pkg_resources": "setuptools",
    "setuptools": "setuptools",
    "typing_extensions": "typing_extensions",
    # Modules that ship inside another distribution, and import names research code often uses.
    "pylab": "matplotlib",
    "matplotlib_inline": "matplotlib-inline",
    "seaborn": "seaborn",
    "scipy": "scipy",
    "numpy": "numpy",
    "pandas": "pandas",
    "openpyxl": "openpyxl",
    "xlrd": "xlrd",
    "Cython": "Cython",
    "IPython": "ipython",
    "ipywidgets": "ipywidgets",
    "jupyter": "jupyter",
    "plotly": "plotly",
    "bokeh": "bokeh",
    "altair": "altair",
    "pingouin": "pingouin",
    "lmfit": "lmfit",
    "uncertainties": "uncertainties",
    "pint": "Pint",
    "emcee": "emcee",
    "corner": "corner",
    "pymc": "pymc",
    "pymc3": "pymc3",
    "arviz": "arviz",
    "pystan": "pystan",
    "prophet": "prophet",
    "obspy": "obspy",
    "gpxpy": "gpxpy",
    "wfdb": "wfdb",
    "pyedflib": "pyEDFlib",
    "neo": "neo",
    "brian2": "Brian2",
    "nilearn": "nilearn",
    "dipy": "dipy",
    "pydicom": "pydicom",
    "SimpleITK": "SimpleITK",
    "tifffile": "tifffile",
    "imageio": "imageio",
    "skbio": "scikit-bio",
    "pyteomics": "pyteomics",
    "pyopenms": "pyopenms",
    "vcf": "PyVCF",
    "cyvcf2": "cyvcf2",
    "gseapy": "gseapy",
    "mols": "mols",
    "openbabel": "openbabel-wheel",
    "pybel": "openbabel-wheel",
    "chempy": "chempy",
    "periodictable": "periodictable",
    "cantera": "Cantera",
    "CoolProp": "CoolProp",
    "thermo": "thermo",
    "fluids": "fluids",
    "qutip": "qutip",
    "pyscf": "pyscf",
    "mdtraj": "mdtraj",
    "nglview": "nglview",
    "py3Dmol": "py3Dmol",
    "pvlib": "pvlib",
    "metpy": "MetPy",
    "wrf": "wrf-python",
    "cftime": "cftime",
    "pygrib": "pygrib",
    "cfgrib": "cfgrib",
    "zarr": "zarr",
    "dask": "dask",
    "fiona": "fiona",
    "folium": "folium",
    "geopy": "geopy",
    "haversine": "haversine",
    "utm": "utm",
    "sunpy": "sunpy",
    "photutils": "photutils",
    "astroquery": "astroquery",
    "lightkurve": "lightkurve",
    "galpy": "galpy",
    "camb": "camb",
    "pyfits": "pyfits",
    "mpmath": "mpmath",
    "tabulate": "tabulate",
    "termcolor": "termcolor",
    "colorama": "colorama",
    "click": "click",
    "toml": "toml",
    "tomli": "tomli",
    "simplejson": "simplejson",
    "ujson": "ujson",
    "orjson": "orjson",
    "msgpack": "msgpack",
    "joblib": "joblib",
    "cloudpickle": "cloudpickle",
    "dill": "dill",
    "patsy": "patsy",
    "probscale": "probscale",
    "xlwt": "xlwt",
    "xlsxwriter": "XlsxWriter",
    "docopt": "docopt",
    "fire": "fire",
    "typer": "typer",
    "rich": "rich",
    "natsort": "natsort",
    "sortedcontainers": "sortedcontainers",
    "more_itertools": "more-itertools",
    "pywt": "PyWavelets",
    "sounddevice": "sounddevice",
    "soundfile": "SoundFile",
    "librosa": "librosa",
    "keras": "keras",
    "jax": "jax",
    "flax": "flax",
    "optax": "optax",
    "transformers": "transformers",
    "datasets": "datasets",
    "sentence_transformers": "sentence-transformers",
    "gensim": "gensim",
    "nltk": "nltk",
    "spacy": "spacy",
    "wordcloud": "wordcloud",
    "pulp": "PuLP",
    "cvxpy": "cvxpy",
    "pyomo": "Pyomo",
    "ortools": "ortools",
    "deap": "deap",
    "pygame": "pygame",
    "wx": "wxPython",
    "PyQt5": "PyQt5",
    "PyQt6": "PyQt6",
    "PySide2": "PySide2",
    "PySide6": "PySide6",
    "gi": "PyGObject",
    "win32api": "pywin32",
    "win32com": "pywin32",
    "pythoncom": "pywin32",
    "Xlib": "python-xlib",
    "websocket": "websocket-client",
    "socks": "PySocks",
    "nacl": "PyNaCl",
    "markdown": "Markdown",
    "jinja2": "Jinja2",
    "flask": "Flask",
    "werkzeug": "Werkzeug",
    "kivy": "Kivy",
}

# The first day the wheels of a CPython minor version were broadly on PyPI for the scientific stack
# (numpy, scipy, pandas, matplotlib). An environment ``as of`` an earlier date cannot be installed
# from wheels on that interpreter, so a repository's era is never placed before this floor.
WHEEL_ERA_FLOOR = {
    "3.8": "2020-01-15", "3.9": "2021-03-01", "3.10": "2022-03-01", "3.11": "2022-11-25",
    "3.12": "2024-03-01", "3.13": "2025-03-01", "3.14": "2026-03-01",
}


def distribution_for(import_name: str) -> str:
    """The PyPI distribution that provides ``import_name``: the table above, else what the running
    environment's installed distributions say provide it (when exactly one does), else the name itself."""
    if import_name in IMPORT_TO_DIST:
        return IMPORT_TO_DIST[import_name]
    providers = sorted(set(_installed_providers().get(import_name, ())))
    return providers[0] if len(providers) == 1 else import_name


@functools.lru_cache(maxsize=1)
def _installed_providers() -> dict[str, list[str]]:
    try:
        return importlib.metadata.packages_distributions()
    except Exception:  # a broken distribution's metadata must not stop inference
        return {}


def era_date(commit_date: str | None, python_version: str) -> str:
    """The day of the releases a repository was written against: its commit date, but never before the
    first releases with wheels for this interpreter (``WHEEL_ERA_FLOOR``); the floor when the date is unknown."""
    minor = ".".join(python_version.split(".")[:2])
    floor = WHEEL_ERA_FLOOR.get(minor, "2020-01-15")
    day = (commit_date or "")[:10]
    return max(day, floor) if re.fullmatch(r"\d{4}-\d{2}-\d{2}", day) else floor


def script_imports(script: str, sources: dict[str, str]) -> tuple[set[str], set[str]]:
    """``(required, optional)`` top-level import names of ``script`` and of the repository modules it
    imports, followed transitively. ``sources`` maps the repository's Python file paths to their text.

    A repository's other scripts are not this script's business: one driver importing a library that
    has no wheel must not make every analysis beside it uninstallable.
    """
    required, optional, seen, todo = set(), set(), set(), [script]
    while todo and len(seen) < 500:
        path = todo.pop()
        if path in seen or path not in sources:
            continue
        seen.add(path)
        try:
            tree = parse_python(sources[path], path)
        except UnparseableSource:
            continue
        for dotted, level, guarded in _imports_of(tree):
            local = _local_module(dotted, level, path, script, sources)
            if local:
                todo.extend(local)
            elif not level and dotted:
                (optional if guarded else required).add(dotted.split(".")[0])
    return required - optional, optional - required


def _imports_of(tree: ast.Module) -> list[tuple[str, int, bool]]:
    """(dotted module, relative level, inside an ImportError guard) for every import; ``from a import b``
    also yields ``a.b``, which is a module when ``b`` is one."""
    guarded: set[int] = set()
    for node in ast.walk(tree):
        if isinstance(node, ast.Try) and any(_catches_import_error(h) for h in node.handlers):
            for statement in node.body:
                guarded.update(id(n) for n in ast.walk(statement))
    found = []
    for node in ast.walk(tree):
        if isinstance(node, ast.Import):
            found.extend((alias.name, 0, id(node) in guarded) for alias in node.names)
        elif isinstance(node, ast.ImportFrom):
            base = node.module or ""
            found.append((base, node.level, id(node) in guarded))
            found.extend((f"{base}.{alias.name}" if base else alias.name, node.level, id(node) in guarded)
                         for alias in node.names if alias.name != "*")
    return found


def _local_module(dotted: str, level: int, importer: str, script: str, sources: dict[str, str]) -> list[str]:
    """Repository files an import loads (the module and the packages above it), looked up from the
    importing file's folder for a relative import, else from the script's folder and the root."""
    parts = [p for p in dotted.split(".") if p]
    if level:
        base = posixpath.dirname(importer)
        for _ in range(level - 1):
            base = posixpath.dirname(base)
        bases = [base]
    else:
        bases = list(dict.fromkeys([posixpath.dirname(script), posixpath.dirname(importer), ""]))
    for base in bases:
        hits = []
        for depth in range(1, len(parts) + 1):
            stem = posixpath.join(base, *parts[:depth]) if base else posixpath.join(*parts[:depth])
            hits.extend(c for c in (stem + ".py", posixpath.join(stem, "__init__.py")) if c in sources)
        if hits:
            return hits
        if not parts:
            init = posixpath.join(base, "__init__.py") if base else "__init__.py"
            return [init] if init in sources else []
    return []


def scan_imports(source: str) -> tuple[set[str], set[str]]:
    """Return ``(absolute top-level imports, relative-import module names)``; raises UnparseableSource
    (a SyntaxError)."""
    absolute, _, relative = scan_imports_detailed(source)
    return absolute, relative


def scan_imports_detailed(source: str, path: str = "<source>") -> tuple[set[str], set[str], set[str]]:
    """``(all absolute imports, the optional ones, relative modules)``; raises UnparseableSource.

    An import is optional when it sits in a ``try`` block whose handlers catch ImportError
    (or ModuleNotFoundError, or everything): the program runs without it, so it is not a
    requirement of the sandbox.
    """
    tree = parse_python(source, path)
    absolute, optional, relative = set(), set(), set()
    guarded: set[int] = set()
    for node in ast.walk(tree):
        if isinstance(node, ast.Try) and any(_catches_import_error(h) for h in node.handlers):
            for statement in node.body:
                guarded.update(id(n) for n in ast.walk(statement))
    for node in ast.walk(tree):
        names = []
        if isinstance(node, ast.Import):
            names = [alias.name.split(".")[0] for alias in node.names]
        elif isinstance(node, ast.ImportFrom):
            if node.level:
                relative.add(node.module or "")
            elif node.module:
                names = [node.module.split(".")[0]]
        absolute.update(names)
        if id(node) in guarded:
            optional.update(names)
    return absolute, optional & absolute, relative


def _catches_import_error(handler: ast.ExceptHandler) -> bool:
    if handler.type is None:
        return True
    types = handler.type.elts if isinstance(handler.type, ast.Tuple) else [handler.type]
    names = {t.id if isinstance(t, ast.Name) else getattr(t, "attr", "") for t in types}
    return bool(names & {"ImportError", "ModuleNotFoundError", "Exception", "BaseException"})


def third_party(imports: set[str], local_modules: set[str]) -> list[str]:
    stdlib = set(sys.stdlib_module_names) | {"__future__"}
    return sorted(name for name in imports if name not in stdlib and name not in local_modules)


def parse_requirements(text: str) -> list[str]:
    """The entries of a pip requirements file, option lines included (``requirement_refusal`` refuses those).

    Follows pip's reading: a trailing backslash continues the line, ``#`` starts a comment only at the
    start of a line or after whitespace (so ``...#egg=x`` stays part of a URL), and ``--hash`` options
    are dropped because they only narrow which release of a named requirement is accepted.
    """
    reqs = []
    for line in re.sub(r"\\\r?\n", " ", text).splitlines():
        line = _HASH_OPTION.sub("", re.split(r"(?:^|\s)#", line, maxsplit=1)[0]).strip()
        if line:
            reqs.append(line)
    return reqs


_HASH_OPTION = re.compile(r"\s--hash[=\s]\S+")

# Why a requirement is refused, by the code recorded in a reject's detail. Each is a way a manifest
# could make the sandbox install something other than a named release from the package index, i.e.
# run code we never asked for, fetched from wherever the repository's author chose.
REFUSALS = {
    "direct_url": "a direct URL reference",
    "vcs": "a version-control checkout",
    "local_path": "a local path or archive file",
    "editable": "an editable install",
    "index_option": "an index or find-links option",
    "include": "an include of another requirements or constraints file",
    "pip_option": "a pip option",
    "unparseable": "not a valid PEP 508 requirement",
}
_EDITABLE = ("-e", "--editable")
_INDEX_OPTIONS = ("-i", "--index-url", "--extra-index-url", "--no-index", "-f", "--find-links", "--trusted-host")
_INCLUDES = ("-r", "--requirement", "-c", "--constraint")
_VCS = re.compile(r"^(git|hg|svn|bzr)\+", re.I)
_SCP_LIKE = re.compile(r"^[\w.-]+@[\w.-]+:")  # git@github.com:owner/repo.git
_URL = re.compile(r"^[a-z][a-z0-9+.-]*://", re.I)
_OPTION_AFTER = re.compile(r"\s-{1,2}[a-z]", re.I)  # per-requirement options: --global-option, --config-settings
_ARCHIVES = (".whl", ".zip", ".tar", ".tar.gz", ".tgz", ".tar.bz2", ".tbz2", ".tar.xz", ".txz", ".egg")


@dataclass(frozen=True)
class RefusedRequirement:
    requirement: str
    why: str  # a key of REFUSALS

    @property
    def message(self) -> str:
        return (f"refused requirement {self.requirement!r}: {REFUSALS[self.why]}; only named releases "
                "from the package index are installed")


def requirement_refusal(spec: str) -> str | None:
    """Why ``spec`` may not be installed (a key of REFUSALS), or None for a named release such as
    ``numpy==1.26.4`` or ``pandas[excel]>=2 ; python_version >= "3.9"``."""
    from packaging.requirements import InvalidRequirement, Requirement

    text = spec.strip()
    if text.startswith("-"):
        option = re.split(r"[\s=]", text, maxsplit=1)[0]
        # Short options may be glued to their value (-rother.txt, -egit+https://...).
        short = option[:2] if not option.startswith("--") else option
        if option in _EDITABLE or short == "-e":
            return "editable"
        if option in _INCLUDES or short in ("-r", "-c"):
            return "include"
        if option in _INDEX_OPTIONS or short in ("-i", "-f"):
            return "index_option"
        return "pip_option"
    if _VCS.match(text) or _SCP_LIKE.match(text):
        return "vcs"
    if text.lower().startswith("file:"):
        return "local_path"
    if _URL.match(text):
        return "direct_url"
    if _OPTION_AFTER.search(text.split(";", 1)[0]):
        return "pip_option"
    try:
        requirement = Requirement(text)
    except InvalidRequirement:
        if text.startswith((".", "~")) or "/" in text or "\\" in text or text.lower().endswith(_ARCHIVES):
            return "local_path"
        return "unparseable"
    if requirement.url is not None:
        url = requirement.url.strip()
        if _VCS.match(url) or _SCP_LIKE.match(url):
            return "vcs"
        return "direct_url" if _URL.match(url) and not url.lower().startswith("file:") else "local_path"
    if requirement.name.lower().endswith(_ARCHIVES):
        return "local_path"  # foo.whl and foo.tar.gz parse as names, but pip reads them as files
    return None


def screen_requirements(specs: list[str]) -> tuple[list[str], list[RefusedRequirement]]:
    """``(named releases, refused)`` of ``specs``, each in first-seen order without repeats."""
    kept, refused = [], []
    for spec in dict.fromkeys(specs):
        why = requirement_refusal(spec)
        if why is None:
            kept.append(spec)
        else:
            refused.append(RefusedRequirement(spec, why))
    return kept, refused


def canonical(name: str) -> str:
    return re.sub(r"[-_.]+", "-", name).lower()


def normalise_requirement(spec: str, python_version: str) -> str | None:
    """A requirement in canonical form (pins and extras kept), or None when its marker excludes this Python.

    Raises ValueError naming the requirement when it cannot be parsed.
    """
    from packaging.requirements import InvalidRequirement, Requirement

    try:
        requirement = Requirement(spec)
    except InvalidRequirement as exc:
        raise ValueError(f"cannot parse requirement {spec!r}: {exc}") from None
    if requirement.marker is not None and not requirement.marker.evaluate({"python_version": python_version,
                                                                          "python_full_version": python_version}):
        return None
    requirement.marker = None
    requirement.name = canonical(requirement.name)
    return str(requirement)


def requirement_name(spec: str) -> str:
    return canonical(re.split(r"[\s\[<>=!~;@]", spec.strip(), maxsplit=1)[0])


def resolve_distributions(requirements: list[str], imports: list[str], optional: set[str],
                          python_version: str) -> tuple[list[str], list[RefusedRequirement]]:
    """What the sandbox must install: manifest requirements that name releases (pins kept, markers
    evaluated) plus every required third-party import no manifest names. Returns ``(distributions,
    refused requirements)``; a caller that screened its manifests first gets no refusals here, but
    the screen is repeated so that nothing reaches the sandbox unscreened whoever calls this.
    """
    chosen: dict[str, str] = {}
    named, refused = screen_requirements(requirements)
    for spec in named:
        try:
            normal = normalise_requirement(spec, python_version)
        except Exception:  # a marker packaging cannot evaluate; hostile text, so any failure is a refusal
            refused.append(RefusedRequirement(spec, "unparseable"))
            continue
        if normal is not None:
            chosen.setdefault(requirement_name(normal), normal)
    for name in imports:
        if name in optional:
            continue
        dist = distribution_for(name)
        chosen.setdefault(canonical(dist), canonical(dist))
    return sorted(chosen.values()), refused


def parse_pyproject(text: str) -> list[str]:
    data = tomllib.loads(text)
    project = data.get("project", {})
    return _entries(project.get("dependencies", []) if isinstance(project, dict) else [], "project.dependencies")


def parse_environment_yml(text: str) -> list[str]:
    data = yaml.safe_load(text) or {}
    if not isinstance(data, dict):
        raise ValueError("an environment file must be a mapping")
    reqs = []
    for dep in _listed(data.get("dependencies", []) or [], "dependencies"):
        if isinstance(dep, str) and re.split(r"[=<>!~ ]", dep, maxsplit=1)[0].strip() != "python":
            reqs.append(dep.replace("=", "==", 1) if re.match(r"^[\w.-]+=[^=]", dep) else dep)
        elif isinstance(dep, dict):
            reqs.extend(_entries(dep.get("pip", []) or [], "dependencies.pip"))
    return reqs


def _listed(value, key: str) -> list:
    # A string here would be read letter by letter, each letter a "requirement" to install.
    if not isinstance(value, list):
        raise ValueError(f"{key} must be a list, not {type(value).__name__}")
    return value


def _entries(value, key: str) -> list[str]:
    """A manifest's list of requirements as text. An entry that is not text is kept in a form the
    policy refuses as unparseable (a bare ``3`` would otherwise read as a package named "3")."""
    return [v if isinstance(v, str) else f"<not text: {v!r}>" for v in _listed(value, key)]


def parse_setup_cfg(text: str) -> list[str]:
    import configparser

    parser = configparser.ConfigParser(interpolation=None)
    parser.read_string(text)
    raw = parser.get("options", "install_requires", fallback="")
    return [line.strip() for line in raw.splitlines() if line.strip() and not line.strip().startswith("#")]


def parse_setup_py(text: str) -> list[str]:
    """``install_requires`` of a ``setup(...)`` call, when it is a literal list (setup.py is never run)."""
    requirements: list[str] = []
    for node in ast.walk(parse_python(text, "setup.py")):
        if isinstance(node, ast.Call) and getattr(node.func, "id", getattr(node.func, "attr", None)) == "setup":
            for keyword in node.keywords:
                if keyword.arg == "install_requires":
                    try:
                        value = ast.literal_eval(keyword.value)
                    except (ValueError, SyntaxError):
                        continue
                    if isinstance(value, str):  # setuptools reads a string as one requirement per line
                        value = [line.strip() for line in value.splitlines() if line.strip()]
                    elif isinstance(value, (tuple, set, frozenset)):
                        value = list(value) if isinstance(value, tuple) else sorted(value, key=repr)
                    requirements.extend(_entries(value, "install_requires"))
    return requirements


MANIFEST_PARSERS = {
    "setup.cfg": parse_setup_cfg,
    "setup.py": parse_setup_py,
    "pyproject.toml": parse_pyproject,
    "environment.yml": parse_environment_yml,
    "environment.yaml": parse_environment_yml,
}


def parse_manifest(name: str, text: str) -> list[str]:
    if name in MANIFEST_PARSERS:
        return MANIFEST_PARSERS[name](text)
    if name.startswith("requirements") and name.endswith(".txt"):
        return parse_requirements(text)
    return []
