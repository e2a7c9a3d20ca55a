"""Code structure for `index_codebase`: tree-sitter parsing of source files and call-graph resolution.

`parse_source` turns one file into symbols (functions, methods, classes with signatures, docstrings,
line and byte ranges, and the raw callee expressions in each body) plus its imports. `resolve` links
the parsed files of a whole codebase: calls, inheritance and file imports that land inside it.

Qualified names are "<module>.<Class>.<method>" in every language, where the module is
- Python: the dotted path without `.py` (`pkg/__init__.py` -> `pkg`; a leading `src/` is dropped);
- JavaScript/TypeScript: the path without extension, "/" -> "." (`src/util/index.ts` -> `src.util.index`);
- Go: the package directory, "/" -> "." (a file in the root directory: its `package` name), and
  methods are `<module>.<ReceiverType>.<Method>`;
- Rust: `src/lib.rs`/`src/main.rs` -> `crate`, `src/a/b.rs` and `src/a/b/mod.rs` -> `crate.a.b`;
  impl items are methods of the implementing type and inline `mod x { }` adds `.x`.
"""

from ._languages import LANGUAGES, language_for
from ._parsing import parse_source
from ._resolve import resolve
from ._structure import CodeLinks, Import, ParsedFile, Symbol

__all__ = [
    "LANGUAGES",
    "CodeLinks",
    "Import",
    "ParsedFile",
    "Symbol",
    "language_for",
    "parse_source",
    "resolve",
]
