"""Dependency inference: manifests plus an import scan mapped to distributions."""
from __future__ import annotations

import ast
import re
import sys
import tomllib

import yaml

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
}


def distribution_for(import_name: str) -> str:
    return IMPORT_TO_DIST.get(import_name, import_name)


def scan_imports(source: str) -> tuple[set[str], set[str]]:
    """Return ``(absolute top-level imports, relative-import module names)``; raises SyntaxError."""
    absolute, _, relative = scan_imports_detailed(source)
    return absolute, relative


def scan_imports_detailed(source: str) -> tuple[set[str], set[str], set[str]]:
    """``(all absolute imports, the optional ones, relative modules)``.

    An import is optional when it sits in a ``try`` block whose handlers catch ImportError
    (or ModuleNotFoundError, or everything): the program runs without it, so it is not a
    requirement of the sandbox.
    """
    tree = ast.parse(source)
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
    reqs = []
    for line in text.splitlines():
        line = line.split(" #", 1)[0].split("#", 1)[0].strip() if not line.lstrip().startswith("#") else ""
        if not line or line.startswith(("-", "--")):
            continue
        reqs.append(line)
    return reqs


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
                          python_version: str) -> tuple[list[str], list[str]]:
    """What the sandbox must install: manifest requirements (pins kept, markers evaluated) plus every
    required third-party import no manifest names. Returns ``(distributions, unparseable requirements)``.
    """
    chosen: dict[str, str] = {}
    bad = []
    for spec in requirements:
        try:
            normal = normalise_requirement(spec, python_version)
        except ValueError:
            bad.append(spec)
            continue
        if normal is not None:
            chosen.setdefault(requirement_name(normal), normal)
    for name in imports:
        if name in optional:
            continue
        dist = distribution_for(name)
        chosen.setdefault(canonical(dist), canonical(dist))
    return sorted(chosen.values()), bad


def parse_pyproject(text: str) -> list[str]:
    data = tomllib.loads(text)
    return list(data.get("project", {}).get("dependencies", []))


def parse_environment_yml(text: str) -> list[str]:
    data = yaml.safe_load(text) or {}
    reqs = []
    for dep in data.get("dependencies", []) or []:
        if isinstance(dep, str) and re.split(r"[=<>!~ ]", dep, maxsplit=1)[0].strip() != "python":
            reqs.append(dep.replace("=", "==", 1) if re.match(r"^[\w.-]+=[^=]", dep) else dep)
        elif isinstance(dep, dict):
            reqs.extend(str(d) for d in dep.get("pip", []) or [])
    return reqs


def parse_setup_cfg(text: str) -> list[str]:
    import configparser

    parser = configparser.ConfigParser(interpolation=None)
    parser.read_string(text)
    raw = parser.get("options", "install_requires", fallback="")
    return [line.strip() for line in raw.splitlines() if line.strip() and not line.strip().startswith("#")]


def parse_setup_py(text: str) -> list[str]:
    """``install_requires`` of a ``setup(...)`` call, when it is a literal list (setup.py is never run)."""
    requirements: list[str] = []
    for node in ast.walk(ast.parse(text)):
        if isinstance(node, ast.Call) and getattr(node.func, "id", getattr(node.func, "attr", None)) == "setup":
            for keyword in node.keywords:
                if keyword.arg == "install_requires":
                    try:
                        value = ast.literal_eval(keyword.value)
                    except (ValueError, SyntaxError):
                        continue
                    requirements.extend(str(v) for v in value if isinstance(v, str))
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
