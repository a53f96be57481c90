"""A local stand-in for the Hugging Face Hub, for tests of publishing a release and of reading it back.

Tests point ``huggingface_hub`` (and ``datasets``, which reads through it) at it
(``HfApi(endpoint=server.url)`` in-process, or ``HF_ENDPOINT`` in a subprocess), so the production
client code is what runs; only the Hub is replaced. It speaks the routes huggingface_hub 2.x uses to
create a repository and commit to it, and those ``hf_hub_download``, ``snapshot_download``,
``HfFileSystem`` and ``datasets.load_dataset`` use to read one:

- ``GET /api/whoami-v2``
- ``POST /api/repos/create`` (409 when the repository exists, as the Hub answers)
- ``GET /api/{type}s/{ns}/{name}[/revision/{rev}]``: repository info with the head commit (``sha``)
- ``GET /api/{type}s/{ns}/{name}/tree/{rev}[/{path}]``: listing, ``recursive``, paged with a ``Link`` header
- ``POST /api/{type}s/{ns}/{name}/paths-info/{rev}``: form fields ``paths`` and ``expand``
- ``GET|HEAD /[{type}s/]{ns}/{name}/resolve/{rev}/{path}``: a file's bytes (``Range`` honoured, 206) with
  the headers ``hf_hub_download`` reads: ``X-Repo-Commit``, ``ETag`` (git blob id, or the sha256 of an LFS
  file), ``Content-Length``, and ``X-Linked-Etag``/``X-Linked-Size`` for LFS files. The real Hub redirects
  LFS files to a CDN; serving them in place with the linked headers is what a client sees after the redirect.
- ``POST /api/{type}s/{ns}/{name}/branch/{branch}``
- ``POST /api/validate-yaml``: the YAML header of a README.md must parse to a mapping
- ``POST /api/{type}s/{ns}/{name}/preupload/{rev}``: ``regular`` or ``lfs`` per file, and the remote oid
- ``POST /{type}s/{ns}/{name}.git/info/lfs/objects/batch``: the LFS batch API with the ``basic`` transfer
  only; the upload ``href`` is a ``PUT /lfs-upload/{oid}`` here, then ``POST /lfs-verify/{oid}``
- ``POST /api/{type}s/{ns}/{name}/commit/{rev}``: the ndjson commit (``header``, ``file``, ``lfsFile``,
  ``deletedFile``, ``deletedFolder``); an ``lfsFile`` must name an object uploaded before

Like the Hub, a new repository starts with one commit holding ``.gitattributes``; files matching its
LFS patterns, or of 10 MB and more, are stored as LFS objects, the rest as regular git blobs, and
listings report git blob ids (plus ``lfs.oid``, the sha256, for LFS files) the way the Hub does.

Xet: huggingface_hub decides on the client side whether to upload through Xet, whenever the
``hf_xet`` package can be imported (``utils/_runtime.is_xet_available``); no server answer changes that.
This stand-in speaks only the LFS basic transfer, so its clients must set ``HF_HUB_DISABLE_XET=1``
(in-process: ``huggingface_hub.constants.HF_HUB_DISABLE_XET = True``). A client that tries Xet anyway
asks for ``/xet-write-token/`` first; that is refused with 501 and recorded in ``xet_requests``.

A revision is a branch name or any commit id the repository ever had (``snapshot_download`` lists and
downloads at the commit id it resolved first). Reads of a public repository need no token; a private one
answers 401 without the right token, as the Hub does.

Everything lives in memory: ``files(repo_id)`` is the content at a branch head, ``commits`` every commit
with the paths it added and deleted, ``lfs_uploads`` every object received, ``requests`` every request
(method, path, whether it carried the right token), so a test can check exactly what was uploaded.
"""
from __future__ import annotations

import base64
import fnmatch
import hashlib
import json
import re
import threading
import urllib.parse
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from typing import Any

import yaml

# The patterns the Hub writes into a new repository's .gitattributes (a subset: data formats).
GITATTRIBUTES = "".join(f"{pattern} filter=lfs diff=lfs merge=lfs -text\n" for pattern in (
    "*.arrow", "*.parquet", "*.bin", "*.gz", "*.npy", "*.npz", "*.pt", "*.safetensors", "*.tar", "*.zip",
))
LFS_PATTERNS = [line.split()[0] for line in GITATTRIBUTES.splitlines()]
LFS_MIN_BYTES = 10 * 1024 * 1024

_REPO_ROUTE = re.compile(
    r"^/api/(?P<type>models|datasets|spaces)/(?P<repo>[^/]+/[^/]+?)"
    r"(?:/(?P<action>revision|tree|paths-info|branch|preupload|commit|xet-write-token)(?:/(?P<rest>.*))?)?$")
_RESOLVE_ROUTE = re.compile(
    r"^/(?:(?P<type>datasets|spaces)/)?(?P<repo>[^/]+/[^/]+)/resolve/(?P<revision>[^/]+)/(?P<path>.+)$")
_LFS_ROUTE = re.compile(r"^/(?:(?P<type>datasets|spaces)/)?(?P<repo>[^/]+/[^/]+)\.git/info/lfs/objects/batch$")


def git_blob_id(content: bytes) -> str:
    """The git object id of a blob, which the Hub reports as a file's ``oid``."""
    return hashlib.sha1(b"blob %d\0" % len(content) + content).hexdigest()


def lfs_pointer(sha256: str, size: int) -> bytes:
    """The pointer git stores in place of an LFS file's content."""
    return f"version https://git-lfs.github.com/spec/v1\noid sha256:{sha256}\nsize {size}\n".encode()


class FakeHubServer:
    def __init__(self, token: str = "hf_test_token", user: str = "trailforge-tester", tree_page_size: int = 1000):
        self.token = token
        self.user = user
        self.tree_page_size = tree_page_size
        self.repos: dict[tuple[str, str], dict[str, Any]] = {}  # (type, repo_id) -> {"private", "branches"}
        self.lfs_objects: dict[str, bytes] = {}  # sha256 -> content
        self.lfs_uploads: list[str] = []  # sha256 of every object PUT, in order
        self.commits: list[dict[str, Any]] = []
        self.requests: list[dict[str, Any]] = []
        self.xet_requests: list[str] = []
        self._lock = threading.Lock()
        server = self

        class Handler(BaseHTTPRequestHandler):
            def log_message(self, *args):  # keep test output quiet
                pass

            def do_GET(self):  # noqa: N802 (http.server's naming)
                server._handle(self, "GET")

            def do_HEAD(self):  # noqa: N802
                server._handle(self, "HEAD")

            def do_POST(self):  # noqa: N802
                server._handle(self, "POST")

            def do_PUT(self):  # noqa: N802
                server._handle(self, "PUT")

        self.httpd = ThreadingHTTPServer(("127.0.0.1", 0), Handler)
        self.thread = threading.Thread(target=self.httpd.serve_forever, daemon=True)

    @property
    def url(self) -> str:
        return f"http://127.0.0.1:{self.httpd.server_address[1]}"

    def __enter__(self) -> "FakeHubServer":
        self.thread.start()
        return self

    def __exit__(self, *exc) -> None:
        self.httpd.shutdown()
        self.httpd.server_close()

    # What tests look at.

    def files(self, repo_id: str, revision: str = "main", repo_type: str = "dataset") -> dict[str, bytes]:
        """Path -> content at the head of ``revision``."""
        with self._lock:
            branch = self.repos[(repo_type, repo_id)]["branches"][revision]
            return {path: self._content(entry) for path, entry in sorted(branch["files"].items())}

    def write_requests(self) -> list[dict[str, Any]]:
        """Every request that could change the Hub: repository creation, preupload, LFS, commits, branches."""
        reads = ("/api/whoami-v2", "/api/validate-yaml")
        return [r for r in self.requests if r["method"] not in ("GET", "HEAD") and r["path"] not in reads
                and "/paths-info/" not in r["path"]]

    def downloads(self) -> list[str]:
        """The path in the repository of every file served with its content (GET on a resolve route)."""
        found = (_RESOLVE_ROUTE.match(r["path"]) for r in self.requests if r["method"] == "GET")
        return [urllib.parse.unquote(m["path"]) for m in found if m]

    # Request handling.

    def _handle(self, handler: BaseHTTPRequestHandler, method: str) -> None:
        parsed = urllib.parse.urlsplit(handler.path)
        query = dict(urllib.parse.parse_qsl(parsed.query))
        body = _read_body(handler)
        authorized = handler.headers.get("Authorization") == f"Bearer {self.token}"
        with self._lock:
            self.requests.append({"method": method, "path": parsed.path, "authorized": authorized})
        try:
            status, payload, headers = self._route(method, parsed.path, query, body, handler.headers, authorized)
        except _HubError as exc:
            status, payload, headers = exc.status, {"error": exc.message, **exc.extra}, exc.headers
        if isinstance(payload, bytes):
            _send_bytes(handler, status, payload, headers, head=method == "HEAD")
        else:
            _send(handler, status, payload, headers, head=method == "HEAD")

    def _route(self, method, path, query, body, headers, authorized):
        if method == "PUT" and path.startswith("/lfs-upload/"):
            return self._lfs_put(path.rsplit("/", 1)[1], body)
        if method == "POST" and path.startswith("/lfs-verify/"):
            return self._lfs_verify(path.rsplit("/", 1)[1], json.loads(body))
        if method == "POST" and path == "/api/validate-yaml":
            return self._validate_yaml(json.loads(body))
        resolve = _RESOLVE_ROUTE.match(path)
        if method in ("GET", "HEAD") and resolve:
            repo_type = (resolve["type"] or "models")[:-1]
            repo = self._readable(repo_type, resolve["repo"], authorized)
            return self._resolve(repo, urllib.parse.unquote(resolve["revision"]),
                                 urllib.parse.unquote(resolve["path"]), headers)
        read = _REPO_ROUTE.match(path)
        if not authorized and read and (read["action"] in (None, "revision", "tree") and method == "GET"
                                        or read["action"] == "paths-info" and method == "POST"):
            self._readable(read["type"][:-1], read["repo"], authorized)  # public: read on without a token
        elif not authorized:
            raise _HubError(401, "Invalid credentials in Authorization header")
        if method == "GET" and path == "/api/whoami-v2":
            return 200, {"type": "user", "name": self.user, "orgs": [], "auth": {"type": "access_token"}}, {}
        if method == "POST" and path == "/api/repos/create":
            return self._create_repo(json.loads(body))
        lfs = _LFS_ROUTE.match(path)
        if method == "POST" and lfs:
            return self._lfs_batch((lfs["type"] or "models")[:-1], lfs["repo"], json.loads(body))
        match = _REPO_ROUTE.match(path)
        if not match:
            raise _HubError(404, f"no such route: {method} {path}")
        repo_type, repo_id, action = match["type"][:-1], match["repo"], match["action"]
        rest = match["rest"] or ""
        if action == "xet-write-token":
            with self._lock:
                self.xet_requests.append(path)
            raise _HubError(501, "this stand-in Hub speaks the LFS basic transfer only; set HF_HUB_DISABLE_XET=1")
        repo = self._repo(repo_type, repo_id)
        revision, _, sub_path = rest.partition("/")
        revision = urllib.parse.unquote(revision) if revision else "main"
        if method == "GET" and action in (None, "revision"):
            return 200, self._repo_info(repo_type, repo_id, repo, revision), {}
        if method == "GET" and action == "tree":
            return self._tree(repo_type, repo_id, repo, revision, urllib.parse.unquote(sub_path), query)
        if method == "POST" and action == "paths-info":
            return self._paths_info(repo, revision, urllib.parse.parse_qs(body.decode()))
        if method == "POST" and action == "branch":
            return self._create_branch(repo, revision, json.loads(body or b"{}"))
        if method == "POST" and action == "preupload":
            return self._preupload(repo, revision, json.loads(body))
        if method == "POST" and action == "commit":
            return self._commit(repo_type, repo_id, repo, revision, body)
        raise _HubError(404, f"no such route: {method} {path}")

    def _repo(self, repo_type: str, repo_id: str) -> dict[str, Any]:
        repo = self.repos.get((repo_type, repo_id))
        if repo is None:
            raise _HubError(404, "Repository not found", {"X-Error-Code": "RepoNotFound"})
        return repo

    def _readable(self, repo_type: str, repo_id: str, authorized: bool) -> dict[str, Any]:
        """The repository, when this request may read it: public, or private with the right token."""
        repo = self.repos.get((repo_type, repo_id))
        if repo is None or (repo["private"] and not authorized):
            # The Hub does not tell a private repository from a missing one.
            raise _HubError(401 if not authorized else 404, "Repository not found", {"X-Error-Code": "RepoNotFound"})
        return repo

    def _branch(self, repo: dict[str, Any], revision: str) -> dict[str, Any]:
        """A branch head by name, or any earlier commit by its id: ``{"sha", "files"}``."""
        branch = repo["branches"].get(revision)
        if branch is None and revision in repo["snapshots"]:
            return {"sha": revision, "files": repo["snapshots"][revision]}
        if branch is None:
            raise _HubError(404, f"Invalid rev id: {revision}", {"X-Error-Code": "RevisionNotFound"})
        return branch

    def _resolve(self, repo: dict[str, Any], revision: str, path: str, request_headers):
        with self._lock:
            branch = self._branch(repo, revision)
            entry = branch["files"].get(path)
            content = self._content(entry) if entry is not None else None
        commit = {"X-Repo-Commit": branch["sha"]}
        if entry is None:
            # hf_hub_download records the commit of a missing file, so it can answer from cache next time.
            raise _HubError(404, f"{path} does not exist at {revision}", {"X-Error-Code": "EntryNotFound", **commit})
        if entry["lfs"]:
            headers = {**commit, "ETag": f'"{entry["lfs"]}"', "X-Linked-Etag": f'"{entry["lfs"]}"',
                       "X-Linked-Size": str(len(content))}
        else:
            headers = {**commit, "ETag": f'"{git_blob_id(content)}"'}
        headers["Accept-Ranges"] = "bytes"
        wanted = re.fullmatch(r"bytes=(\d*)-(\d*)", request_headers.get("Range", "").strip())
        if wanted and (wanted[1] or wanted[2]):
            if wanted[1]:
                start = int(wanted[1])
                end = min(int(wanted[2]), len(content) - 1) if wanted[2] else len(content) - 1
            else:  # a suffix: the last N bytes
                start, end = max(len(content) - int(wanted[2]), 0), len(content) - 1
            if start >= len(content) and content:
                raise _HubError(416, "requested range not satisfiable", {"Content-Range": f"bytes */{len(content)}"})
            headers["Content-Range"] = f"bytes {start}-{end}/{len(content)}"
            return 206, content[start:end + 1], headers
        return 200, content, headers

    def _create_repo(self, payload: dict[str, Any]):
        repo_type = payload.get("type") or "model"
        repo_id = f"{payload.get('organization') or self.user}/{payload['name']}"
        prefix = "" if repo_type == "model" else f"{repo_type}s/"
        url = f"{self.url}/{prefix}{repo_id}"
        with self._lock:
            if (repo_type, repo_id) in self.repos:
                # The Hub names the existing repository; create_repo(exist_ok=True) reads its url.
                raise _HubError(409, f"You already created this {repo_type} repo", extra={"url": url})
            private = payload.get("visibility", "private" if payload.get("private") else "public") == "private"
            files = {".gitattributes": {"content": GITATTRIBUTES.encode(), "lfs": None}}
            sha = _commit_id("", "initial commit", files)
            self.repos[(repo_type, repo_id)] = {
                "private": private,
                "branches": {"main": {"sha": sha, "files": files}},
                "snapshots": {sha: files},  # commit id -> files, for reads at a commit
            }
        return 200, {"url": url, "name": repo_id, "id": repo_id}, {}

    def _repo_info(self, repo_type, repo_id, repo, revision):
        with self._lock:
            branch = self._branch(repo, revision)
            return {"id": repo_id, "_id": repo_id, "author": repo_id.split("/")[0], "sha": branch["sha"],
                    "private": repo["private"], "disabled": False, "gated": False, "tags": [],
                    "siblings": [{"rfilename": p} for p in sorted(branch["files"])]}

    def _entries(self, files: dict[str, dict[str, Any]]) -> dict[str, dict[str, Any]]:
        """Path -> listing entry, for every file and every folder above one."""
        entries: dict[str, dict[str, Any]] = {}
        for path, entry in files.items():
            entries[path] = self._file_entry(path, entry)
            parts = path.split("/")[:-1]
            for depth in range(1, len(parts) + 1):
                folder = "/".join(parts[:depth])
                entries.setdefault(folder, {"type": "directory", "path": folder, "size": 0,
                                            "oid": hashlib.sha1(folder.encode()).hexdigest()})
        return entries

    def _file_entry(self, path: str, entry: dict[str, Any]) -> dict[str, Any]:
        if entry["lfs"] is None:
            return {"type": "file", "path": path, "size": len(entry["content"]), "oid": git_blob_id(entry["content"])}
        sha256, size = entry["lfs"], len(self.lfs_objects[entry["lfs"]])
        pointer = lfs_pointer(sha256, size)
        return {"type": "file", "path": path, "size": size, "oid": git_blob_id(pointer),
                "lfs": {"oid": sha256, "size": size, "pointerSize": len(pointer)}}

    def _tree(self, repo_type, repo_id, repo, revision, folder, query):
        recursive = query.get("recursive", "false").lower() == "true"
        with self._lock:
            entries = self._entries(self._branch(repo, revision)["files"])
        if folder and entries.get(folder, {}).get("type") != "directory":
            raise _HubError(404, f"{folder} does not exist on {revision}", {"X-Error-Code": "EntryNotFound"})
        prefix = f"{folder}/" if folder else ""
        listed = [e for p, e in sorted(entries.items()) if p.startswith(prefix)
                  and (recursive or "/" not in p[len(prefix):])]
        start = int(query.get("cursor", 0))
        page = listed[start:start + self.tree_page_size]
        headers = {}
        if start + self.tree_page_size < len(listed):
            next_query = urllib.parse.urlencode({**query, "cursor": start + self.tree_page_size})
            quoted = urllib.parse.quote(revision, safe="")
            tail = "/" + urllib.parse.quote(folder, safe="") if folder else ""
            headers["Link"] = f'<{self.url}/api/{repo_type}s/{repo_id}/tree/{quoted}{tail}?{next_query}>; rel="next"'
        return 200, page, headers

    def _paths_info(self, repo, revision, form: dict[str, list[str]]):
        with self._lock:
            entries = self._entries(self._branch(repo, revision)["files"])
        return 200, [entries[p] for p in form.get("paths", []) if p in entries], {}

    def _create_branch(self, repo, branch_name: str, payload: dict[str, Any]):
        with self._lock:
            if branch_name in repo["branches"]:
                raise _HubError(409, f"Reference already exists: refs/heads/{branch_name}")
            start = self._branch(repo, payload.get("startingPoint") or "main")
            repo["branches"][branch_name] = {"sha": start["sha"], "files": dict(start["files"])}
        return 200, {}, {}

    def _validate_yaml(self, payload: dict[str, Any]):
        content = payload.get("content", "")
        match = re.match(r"^---\n(.*?)\n---\n", content, re.S)
        if match:
            try:
                header = yaml.safe_load(match.group(1))
            except yaml.YAMLError as exc:
                return 400, {"errors": [{"message": f"invalid YAML: {exc}"}], "warnings": []}, {}
            if header is not None and not isinstance(header, dict):
                return 400, {"errors": [{"message": "the YAML header must be a mapping"}], "warnings": []}, {}
        return 200, {"errors": [], "warnings": []}, {}

    def _preupload(self, repo, revision, payload: dict[str, Any]):
        with self._lock:
            branch = self._branch(repo, revision)
            answers = []
            for item in payload["files"]:
                mode = "lfs" if _is_lfs(item["path"], item["size"]) else "regular"
                remote = branch["files"].get(item["path"])
                oid = None
                if remote is not None:
                    # The client compares this with its own id: sha256 for LFS files, git blob id otherwise.
                    oid = remote["lfs"] if remote["lfs"] else git_blob_id(remote["content"])
                answers.append({"path": item["path"], "uploadMode": mode, "shouldIgnore": False, "oid": oid})
        return 200, {"files": answers, "commitOid": branch["sha"]}, {}

    def _lfs_batch(self, repo_type, repo_id, payload: dict[str, Any]):
        self._repo(repo_type, repo_id)
        if payload.get("operation") != "upload" or "basic" not in payload.get("transfers", ["basic"]):
            raise _HubError(422, "this stand-in Hub offers only uploads with the basic transfer")
        objects = []
        for obj in payload["objects"]:
            answer = {"oid": obj["oid"], "size": obj["size"], "authenticated": True}
            with self._lock:
                present = obj["oid"] in self.lfs_objects
            if not present:  # no "actions": the Hub already has this object
                answer["actions"] = {"upload": {"href": f"{self.url}/lfs-upload/{obj['oid']}"},
                                     "verify": {"href": f"{self.url}/lfs-verify/{obj['oid']}"}}
            objects.append(answer)
        return 200, {"transfer": "basic", "objects": objects, "hash_algo": "sha256"}, {}

    def _lfs_put(self, oid: str, content: bytes):
        if hashlib.sha256(content).hexdigest() != oid:
            raise _HubError(400, f"uploaded content does not hash to {oid}")
        with self._lock:
            self.lfs_objects[oid] = content
            self.lfs_uploads.append(oid)
        return 200, {}, {}

    def _lfs_verify(self, oid: str, payload: dict[str, Any]):
        with self._lock:
            content = self.lfs_objects.get(oid)
        if content is None or len(content) != payload.get("size"):
            raise _HubError(422, f"object {oid} missing or of the wrong size")
        return 200, {}, {}

    def _commit(self, repo_type, repo_id, repo, revision, body: bytes):
        lines = [json.loads(line) for line in body.splitlines() if line.strip()]
        if not lines or lines[0].get("key") != "header":
            raise _HubError(400, "a commit starts with a header line")
        header = lines[0]["value"]
        with self._lock:
            branch = self._branch(repo, revision)
            if header.get("parentCommit") and header["parentCommit"] != branch["sha"]:
                raise _HubError(412, "parentCommit is not the head of the branch")
            files = dict(branch["files"])
            added, deleted = [], []
            for line in lines[1:]:
                key, value = line["key"], line["value"]
                path = value["path"]
                if key == "file":
                    files[path] = {"content": base64.b64decode(value["content"]), "lfs": None}
                    added.append(path)
                elif key == "lfsFile":
                    if value["oid"] not in self.lfs_objects:
                        raise _HubError(400, f"LFS object {value['oid']} for {path} was never uploaded")
                    files[path] = {"content": None, "lfs": value["oid"]}
                    added.append(path)
                elif key == "deletedFile":
                    if files.pop(path, None) is None:
                        raise _HubError(404, f"A file with this name doesn't exist: {path}",
                                        {"X-Error-Code": "EntryNotFound"})
                    deleted.append(path)
                elif key == "deletedFolder":
                    gone = [p for p in files if p.startswith(path.rstrip("/") + "/")]
                    for p in gone:
                        del files[p]
                    deleted.extend(gone)
                else:
                    raise _HubError(400, f"unknown commit operation {key!r}")
            sha = _commit_id(branch["sha"], header.get("summary", ""), files)
            repo["branches"][revision] = {"sha": sha, "files": files}
            repo["snapshots"][sha] = files
            self.commits.append({"repo_id": repo_id, "revision": revision, "oid": sha,
                                 "summary": header.get("summary", ""), "added": sorted(added),
                                 "deleted": sorted(deleted)})
        prefix = "" if repo_type == "model" else f"{repo_type}s/"
        return 200, {"success": True, "commitOid": sha, "commitUrl": f"{self.url}/{prefix}{repo_id}/commit/{sha}",
                     "hookOutput": ""}, {}

    def _content(self, entry: dict[str, Any]) -> bytes:
        return self.lfs_objects[entry["lfs"]] if entry["lfs"] else entry["content"]


class _HubError(Exception):
    def __init__(self, status: int, message: str, headers: dict[str, str] | None = None,
                 extra: dict[str, Any] | None = None):
        super().__init__(message)
        self.status, self.message, self.headers, self.extra = status, message, headers or {}, extra or {}


def _is_lfs(path: str, size: int) -> bool:
    name = path.rsplit("/", 1)[-1]
    return size >= LFS_MIN_BYTES or any(fnmatch.fnmatch(name, pattern) for pattern in LFS_PATTERNS)


def _commit_id(parent: str, summary: str, files: dict[str, dict[str, Any]]) -> str:
    state = json.dumps({p: e["lfs"] or git_blob_id(e["content"]) for p, e in sorted(files.items())})
    return hashlib.sha1(f"{parent}\n{summary}\n{state}".encode()).hexdigest()


def _read_body(handler: BaseHTTPRequestHandler) -> bytes:
    """The request body, sent with a Content-Length or in chunks (file uploads are streamed)."""
    if handler.headers.get("Transfer-Encoding", "").lower() == "chunked":
        chunks = []
        while True:
            size = int(handler.rfile.readline().split(b";")[0].strip(), 16)
            if size == 0:
                while handler.rfile.readline().strip():  # trailers, then the blank line
                    pass
                return b"".join(chunks)
            chunks.append(handler.rfile.read(size))
            handler.rfile.readline()
    length = int(handler.headers.get("Content-Length") or 0)
    return handler.rfile.read(length) if length else b""


def _send_bytes(handler: BaseHTTPRequestHandler, status: int, data: bytes, headers: dict[str, str],
                head: bool) -> None:
    """A file's content; to a HEAD request the same headers (Content-Length of the content) and no body."""
    handler.send_response(status)
    handler.send_header("Content-Type", "application/octet-stream")
    for key, value in headers.items():
        handler.send_header(key, value)
    handler.send_header("Content-Length", str(len(data)))
    handler.end_headers()
    if not head:
        handler.wfile.write(data)


def _send(handler: BaseHTTPRequestHandler, status: int, payload: Any, headers: dict[str, str],
          head: bool = False) -> None:
    data = json.dumps(payload).encode()
    handler.send_response(status)
    handler.send_header("Content-Type", "application/json")
    for key, value in headers.items():
        handler.send_header(key, value)
    if status >= 400 and "error" in (payload if isinstance(payload, dict) else {}):
        handler.send_header("X-Error-Message", payload["error"])
    handler.send_header("Content-Length", str(len(data)))
    handler.end_headers()
    if not head:  # a HEAD answer has headers only; a body would be read as the next response
        handler.wfile.write(data)
