"""The documentation link of each diagnostic (`Diagnostic.code_description.href`).

Rule docs are the rules' docstrings and IR fact docs the fact modules' docstrings, so the pages are
rendered from them (never copied by hand) into `<user cache>/diagnose/lsp-docs/<version>/` once per
diagnose version, and linked as file:// URIs an editor opens. A `docsUrl` option such as
`https://example.org/rules/{code}.html` links a hosted copy instead.
"""

from __future__ import annotations

import inspect
import logging
import os
from importlib import metadata
from pathlib import Path

from diagnose.ir.facts import EXTRACTORS
from diagnose.knobs import user_cache_root
from diagnose.triage.codes import RULES
from diagnose.triage.docs import rule_page

log = logging.getLogger(__name__)

# Evidence names that are documented by another fact's module (the module that emits them).
FACT_PAGE_OF = {
    "LayoutConversions": "LayoutConversion",
    "SharedMemoryOverLimit": "SharedMemoryUsage",
    "CompilerWarning": "CompilerRemark",
    "RegisterSpill": "PtxasResources",
}


def docs_folder() -> Path:
    """Where rendered pages go: the user cache (`diagnose.knobs.user_cache_root`), per version."""
    try:
        version = metadata.version("diagnose")
    except metadata.PackageNotFoundError:
        version = "dev"
    return user_cache_root() / "lsp-docs" / version


def fact_page(name: str) -> str | None:
    """The Markdown page of an IR fact: its extractor module's docstring."""
    wanted = FACT_PAGE_OF.get(name, name)
    extractor = next((e for e in EXTRACTORS if e.name == wanted), None)
    if extractor is None:
        return None
    module = inspect.getmodule(extractor.func)
    return f"# {name} (IR fact)\n\n{inspect.cleandoc(module.__doc__ or '')}\n" if module else None


class RuleDocs:
    """Renders pages on first use and answers the link for a code; a failed write means no link."""

    def __init__(self, folder: Path | None = None, url_template: str | None = None):
        self.folder = folder
        self.url_template = url_template
        self._written: dict[str, str | None] = {}

    def href(self, code: str) -> str | None:
        if self.url_template:
            return self.url_template.format(code=code)
        if code not in self._written:
            self._written[code] = self._write(code)
        return self._written[code]

    def _write(self, code: str) -> str | None:
        text = rule_page(code) if code in RULES else fact_page(code)
        if text is None:
            return None
        folder = self.folder or docs_folder()
        page = folder / f"{code}.md"
        try:
            if not page.exists() or page.read_text(encoding="utf-8") != text:
                folder.mkdir(parents=True, exist_ok=True)
                tmp = page.with_suffix(f".{os.getpid()}.tmp")
                tmp.write_text(text, encoding="utf-8")
                tmp.replace(page)
        except OSError as err:
            log.warning("cannot write the documentation page %s: %s", page, err)
            return None
        return page.resolve().as_uri()
