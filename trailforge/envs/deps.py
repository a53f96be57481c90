"""Dependency inference: manifests plus an import scan mapped to distributions."""
from __future__ import annotations

import ast
import re
import sys
import tomllib

import yaml

# Import name -> PyPI distribution, where they differ or are easy to get wrong.
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
    "google.protobuf": "protobuf",
    "attr": "attrs",
    "pysam": "pysam",
    "statsmodels": "statsmodels",
    "torch": "torch",
    "tensorflow": "tensorflow",
    "astropy": "astropy",
    "anndata": "anndata",
    "scanpy": "scanpy",
}


def distribution_for(import_name: str) -> str:
    return IMPORT_TO_DIST.get(import_name, import_name)


def scan_imports(source: str) -> tuple[set[str], set[str]]:
    """Return ``(absolute top-level imports, relative-import module names)``; raises SyntaxError."""
    tree = ast.parse(source)
    absolute, relative = set(), set()
    for node in ast.walk(tree):
        if isinstance(node, ast.Import):
            absolute.update(alias.name.split(".")[0] for alias in node.names)
        elif isinstance(node, ast.ImportFrom):
            if node.level:
                relative.add(node.module or "")
            elif node.module:
                absolute.add(node.module.split(".")[0])
    return absolute, relative


def third_party(imports: set[str], local_modules: set[str]) -> list[str]:
    stdlib = set(sys.stdlib_module_names) | {"__future__"}
    return sorted(name for name in imports if name not in stdlib and name not in local_modules)


def parse_requirements(text: str) -> list[str]:
    reqs = []
    for line in text.splitlines():
        line = line.split("#", 1)[0].strip()
        if not line or line.startswith(("-", "--")):
            continue
        reqs.append(line)
    return reqs


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


MANIFEST_PARSERS = {
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
