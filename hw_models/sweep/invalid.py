"""The invalid points of a sweep, on one screen: the first :data:`SHOWN` messages kept to
print, every one counted, and, once there are more than that, all of them written to a
file beside the store (a new file for each run, never one another run wrote). Memory stays
bounded however many points are invalid: the messages past the first go to the file as
they come."""

from __future__ import annotations

import contextlib
import os
import secrets
import time
from pathlib import Path

SHOWN = 10  # messages printed; the rest are counted and in the file


class InvalidPoints:
    """A sink for the messages of invalid points (``append``, as a list is), the full list
    going to ``directory/NAME.invalid-UTC-PID.txt`` when there are more than :data:`SHOWN`."""

    def __init__(self, directory: str | Path, name: str) -> None:
        self.directory, self.name = Path(directory), name
        self.first: list[str] = []
        self.count = 0
        self.path: Path | None = None  # the full list, once it is written
        self._tmp: Path | None = None
        self._file = None
        self.unwritten = ""  # why the full list could not be written, if it could not

    def append(self, message: str) -> None:
        self.count += 1
        if self.count <= SHOWN:
            self.first.append(message)
            return
        if self._file is None and not self.unwritten:
            self._open()
        if self._file is not None:
            self._file.write(message + "\n")

    def __len__(self) -> int:
        return self.count

    def _open(self) -> None:
        try:
            self.directory.mkdir(parents=True, exist_ok=True)
            self._tmp = self.directory / f".{self.name}.invalid.{os.getpid()}.{secrets.token_hex(4)}.tmp"
            self._file = self._tmp.open("x", encoding="utf-8")
            for m in self.first:
                self._file.write(m + "\n")
        except OSError as exc:
            self.unwritten = exc.strerror or str(exc)
            self._file = None

    def close(self) -> Path | None:
        """Put the full list in place (a name no other file has); its path, or None when
        the messages shown are all of them or it could not be written."""
        if self._file is None:
            return None
        self._file.close()
        self._file = None
        stamp = time.strftime("%Y%m%dT%H%M%SZ", time.gmtime())
        try:
            for n in range(1000):
                out = self.directory / (f"{self.name}.invalid-{stamp}-{os.getpid()}" + (f"-{n}" if n else "") + ".txt")
                try:
                    os.link(self._tmp, out)  # never replaces a file
                except FileExistsError:
                    continue
                self.path = out
                break
        except OSError as exc:
            self.unwritten = exc.strerror or str(exc)
        finally:
            with contextlib.suppress(OSError):
                self._tmp.unlink()
        return self.path

    def lines(self) -> list[str]:
        """What to print: the first messages, then the count and where the rest are."""
        out = list(self.first)
        if self.count > len(self.first):
            where = f"all {self.count:,} are in {self.path}" if self.path else \
                f"the full list could not be written beside the store ({self.unwritten})"
            out.append(f"... and {self.count - len(self.first):,} more invalid points ({self.count:,} in all); {where}")
        return out
