"""The one way a check refuses a task: a reason code, a message, and details for the reject row."""
from __future__ import annotations

from typing import Any


class Rejected(Exception):
    def __init__(self, reason: str, message: str, **detail: Any):
        super().__init__(message)
        self.reason, self.message, self.detail = reason, message, detail
