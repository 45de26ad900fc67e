"""What a STUDENT block may hold: nothing that changes what follows it.

The splice (checker_splice) puts each block between harness text of the instructor's file. A block
is lexed as the compiler lexes it (comments, string, character and raw string literals, line
splices, pp-numbers with digit separators, digraphs) and refused, with the student's file and line,
when it
  - ends inside a /* comment, a raw string literal or a line splice (`\\`, trailing blanks too), or
    with (), [], {} unbalanced (per #if group too), or closes a bracket it did not open: a body
    block its function; a file-scope block may close the namespaces it sits in only to reopen the
    same ones, one by one, before it ends (to include a library header at file scope);
  - ends with a word that leaves a statement or declaration open for the harness's next line
    (`static`, `extern "C"`, `if (x)`, `[[...]]`), or with a #pragma that would apply to it;
  - has an #if without its #endif, or an #elif/#else/#endif without its #if;
  - #undefs a macro it did not #define, #defines a reserved name (__x, _X, NDEBUG), pastes tokens
    (##), or defines a macro whose brackets are unbalanced;
  - #includes anything but a <header> of the compiler's own search path (the system's and the CUDA
    toolkit's; not the course tree, no absolute path, no .., no "quotes", no #include MACRO), or
    uses #include_next, #import, #line, a linemarker, __has_include, _Pragma, __pragma, another
    unknown directive, or a #pragma other than unroll, nounroll and omp;
  - holds asm (any spelling), a constructor, destructor, init_priority, section, alias, ifunc,
    weak, weakref, visibility or symver attribute, a .init_array-like section name, a trigraph, a
    control character or a backslash outside a literal;
  - says `using namespace` at file scope where the harness's later code would see it;
  - names a harness macro that could do one of these for it (MacroIndex: a macro that pastes
    tokens into such a name, makes a pragma, holds asm or such an attribute, builds an attribute
    from its arguments, or opens or closes a bracket).
A block that passes has its macros scoped (`scope_lines`): `#pragma push_macro` of every name it
#defines or #undefs before it, `#undef` and `#pragma pop_macro` after it, and `#line` so that the
compiler's errors name the student's own lines. The macros of an exercise's earlier blocks in the
same file are replayed at the start of its later blocks (a `#define BLOCK 256` among the kernels is
seen by the launcher's body block), never by the harness text between them.

Not covered here (C++ rather than the preprocessor): an overload, specialization or declaration in
a file-scope block that harness code after it in the same translation unit picks up; the symbol
rules of the student's objects (checker_symbols) catch harness symbols and static constructors."""

from __future__ import annotations

import bisect
import concurrent.futures as cf
import functools
import glob
import os
import re
import shutil
import stat
import subprocess
import tempfile
import threading
from dataclasses import dataclass, field
from typing import Callable, Iterable, Mapping, Sequence

RULE = "a block may not change what follows it"
# What a block's lines become around them; fix_lines() gives the restoring #line its number.
LINE_RESTORE = "#line 0 /* judge: the spliced file's own numbering */"

FORBIDDEN = {
    "asm": "inline assembly (asm)",
    "__asm": "inline assembly (__asm)",
    "__asm__": "inline assembly (__asm__)",
    "_Pragma": "_Pragma (a #pragma made from a string)",
    "__pragma": "__pragma (a #pragma made from tokens)",
    "__has_include": "__has_include (it probes files outside the block)",
    "__has_include_next": "__has_include_next (it probes files outside the block)",
}
_DENIED_ATTRS = ("constructor", "destructor", "init_priority", "section", "alias", "ifunc", "weak", "weakref")
ATTR_DENY = {a for n in _DENIED_ATTRS + ("visibility", "symver") for a in (n, f"__{n}__")}
ATTR_WORDS = ("__attribute__", "__attribute", "__declspec")
PRAGMAS = ("unroll", "nounroll", "omp")
OMP_DENY = ("begin", "end", "requires", "assumes")  # and `declare target`, `declare variant`
RESERVED = re.compile(r"^(?:__|_[A-Z])|^(?:NDEBUG|defined)$")
SECTION_NAME = re.compile(r"\.(?:init_array|fini_array|preinit_array|ctors|dtors)\b")
# fmt: off
DIRECTIVES = (
    "define", "undef", "include", "pragma", "if", "ifdef", "ifndef", "elif",
    "elifdef", "elifndef", "else", "endif", "error", "warning", "",
)
# fmt: on
REPLAYED = ("define", "undef", "if", "ifdef", "ifndef", "elif", "elifdef", "elifndef", "else", "endif")
CONDITIONALS = {"if": "open", "ifdef": "open", "ifndef": "open", "elif": "else", "elifdef": "else"}
CONDITIONALS.update({"elifndef": "else", "else": "else", "endif": "end"})
OPENERS = {"(": ")", "[": "]", "{": "}"}
CLOSERS = {v: k for k, v in OPENERS.items()}

_SPLICE = re.compile(r"\\[ \t\v\f]*\n")
_CONTROL = re.compile(r"[\x00-\x08\x0e-\x1f\x7f\r]")
_TRIGRAPH = re.compile(r"\?\?[=/'()!<>\-]")
_ENDS_SPLICED = re.compile(r"\\[ \t\v\f]*\r?$")
_RAW_OPEN = re.compile(r'"([^ ()\\\t\v\f\n]{0,16})\(')
_HEADER = re.compile(r"^[A-Za-z0-9_][A-Za-z0-9_.+\-]*(?:/[A-Za-z0-9_][A-Za-z0-9_.+\-]*)*$")
_NAMESPACE = re.compile(r"(?:^| )((?:inline )?namespace(?: [\w$]+(?: :: (?:inline )?[\w$]+)*)?)$")
_IDENT = frozenset("abcdefghijklmnopqrstuvwxyzABCDEFGHIJKLMNOPQRSTUVWXYZ0123456789_$")
# fmt: off
_PUNCT = sorted(
    [
        "%:%:", "...", "<<=", ">>=", "->*", "<=>", "##", "<:", ":>", "<%", "%>", "%:", "::", "->", "++", "--",
        "<<", ">>",
        "<=", ">=", "==", "!=", "&&", "||", "+=", "-=", "*=", "/=", "%=", "&=", "^=", "|=", ".*", "#", "{", "}",
        "[", "]", "(", ")", ";", ":", "?", ".", "+", "-", "*", "/", "%", "^", "&", "|", "~", "!",
        "=", "<", ">", ",",
    ],
    key=len,
    reverse=True,
)
# fmt: on
_DIGRAPHS = {"<%": "{", "%>": "}", "<:": "[", ":>": "]", "%:": "#", "%:%:": "##"}
_RAW_PREFIX = ("R", "u8R", "uR", "UR", "LR")
_ENC_PREFIX = ("u8", "u", "U", "L")


@dataclass
class Refusal:
    path: str
    line: int  # the student's line in the submitted file (1-based)
    what: str

    def __str__(self) -> str:
        return f"{self.path}:{self.line}: {self.what} ({RULE})"


class Refused(Exception):
    def __init__(self, line: int, what: str) -> None:
        super().__init__(what)
        self.line, self.what = line, what  # line: 0-based, of the block


@dataclass
class Tok:
    kind: str  # "id", "num", "str", "punct", "header", "other"
    text: str  # digraphs spelled as their brackets
    line: int  # 0-based physical line
    glued: bool = False  # no blank or comment before it


@dataclass
class Directive:
    name: str  # "define", ... ; "" for a lone #; "<line marker>" for `# 12 "file"`
    line: int
    toks: list  # [Tok] after the name
    fn_like: bool = False  # a #define whose name is glued to "("


class Lexer:
    """The preprocessing tokens of some lines, grouped into directives and code tokens. strict:
    a backslash outside a literal is refused (a universal character name could spell `asm`)."""

    def __init__(self, lines: Sequence[str], strict: bool = True) -> None:
        self.src = "\n".join(x[:-1] if x.endswith("\r") else x for x in lines)
        self.starts = [0] + [m.end() for m in re.finditer("\n", self.src)]
        parts, self.where, at = [], [], 0
        for m in _SPLICE.finditer(self.src):  # phase 2: line splices (undone again in raw strings)
            parts.append(self.src[at : m.start()])
            self.where.extend(range(at, m.start()))
            at = m.end()
        parts.append(self.src[at:])
        self.where.extend(range(at, len(self.src)))
        self.s, self.i, self.prev_end, self.strict = "".join(parts), 0, -1, strict
        self.items: list[Tok | Directive] = []

    def line_of(self, k: int) -> int:
        orig = self.where[k] if k < len(self.where) else len(self.src)
        return bisect.bisect_right(self.starts, orig) - 1

    def run(self) -> list[Tok | Directive]:
        line: list[Tok] = []
        while True:
            self.skip_blanks()
            if self.i >= len(self.s):
                break
            if self.s[self.i] == "\n":
                self.i += 1
                self.end_line(line)
                line = []
                continue
            glued = self.i == self.prev_end
            wants_header = (
                len(line) == 2 and line[0].text == "#" and line[1].text in ("include", "include_next", "import")
            )
            tok = self.header() if wants_header and self.s[self.i] == "<" else self.token()
            tok.glued, self.prev_end = glued, self.i
            line.append(tok)
        self.end_line(line)
        return self.items

    def end_line(self, toks: list[Tok]) -> None:
        if not toks or toks[0].text != "#" or toks[0].kind != "punct":
            self.items.extend(toks)
            return
        if len(toks) == 1:
            self.items.append(Directive("", toks[0].line, []))
            return
        name = toks[1].text if toks[1].kind == "id" else "<line marker>" if toks[1].kind == "num" else toks[1].text
        fn_like = name == "define" and len(toks) > 3 and toks[3].text == "(" and toks[3].glued
        self.items.append(Directive(name, toks[0].line, toks[2:], fn_like))

    def skip_blanks(self) -> None:
        s = self.s
        while self.i < len(s):
            if s[self.i] in " \t\v\f":
                self.i += 1
            elif s.startswith("//", self.i):
                nl = s.find("\n", self.i)
                self.i = len(s) if nl < 0 else nl
            elif s.startswith("/*", self.i):
                end = s.find("*/", self.i + 2)
                if end < 0:
                    raise Refused(self.line_of(self.i), "it ends inside a /* comment")
                self.i = end + 2
            else:
                return

    def header(self) -> Tok:
        nl = self.s.find("\n", self.i)
        nl = len(self.s) if nl < 0 else nl
        end = self.s.find(">", self.i, nl)
        stop = nl if end < 0 else end + 1
        tok = Tok("header", self.s[self.i : stop], self.line_of(self.i))
        self.i = stop
        return tok

    def token(self) -> Tok:
        s, i = self.s, self.i
        c, line = s[i], self.line_of(i)
        if c in _IDENT and not c.isdigit() or ord(c) > 127:
            j = i + 1
            while j < len(s) and (s[j] in _IDENT or ord(s[j]) > 127):
                j += 1
            word, nxt = s[i:j], s[j : j + 1]
            if nxt == '"' and word in _RAW_PREFIX:
                return self.raw(i, j, line)
            if nxt and nxt in "\"'" and word in _ENC_PREFIX:
                return self.quoted(i, j, line)
            self.i = j
            return Tok("id", word, line)
        if c.isdigit() or (c == "." and s[i + 1 : i + 2].isdigit()):
            return self.number(i, line)
        if c in "\"'":
            return self.quoted(i, i, line)
        if c == "\\" and self.strict:
            raise Refused(line, "a backslash outside a literal (a universal character name or a stray line splice)")
        return self.punct(i, line)

    def quoted(self, start: int, q: int, line: int) -> Tok:
        """A string or character literal; one that a newline ends unterminated stops there, as the
        compiler's does (an error in live code, a warning in an #if 0 group)."""
        s, j = self.s, q + 1
        while j < len(s) and s[j] != s[q] and s[j] != "\n":
            j += 2 if s[j] == "\\" else 1
        j = min(j, len(s))
        end = j + 1 if j < len(s) and s[j] == s[q] else j
        self.i = end
        return Tok("str", s[start:end], line)

    def raw(self, start: int, q: int, line: int) -> Tok:
        """R"delim( ... )delim": the body is read from the source as written (no line splices)."""
        m = _RAW_OPEN.match(self.src, self.where[q])
        if not m:
            raise Refused(line, "a raw string literal whose delimiter is malformed")
        close = ")" + m.group(1) + '"'
        end = self.src.find(close, m.end())
        if end < 0:
            raise Refused(line, "it ends inside a raw string literal")
        end += len(close)
        self.i = bisect.bisect_left(self.where, end)
        return Tok("str", self.src[self.where[start] : end], line)

    def number(self, i: int, line: int) -> Tok:
        s, j = self.s, i + 1
        while j < len(s):
            if s[j] in "eEpP" and s[j + 1 : j + 2] in ("+", "-"):
                j += 2
            elif s[j] in _IDENT or s[j] == "." or ord(s[j]) > 127:
                j += 1
            elif s[j] == "'" and s[j + 1 : j + 2] in _IDENT and s[j + 1 : j + 2] != "":
                j += 2  # a digit separator
            else:
                break
        self.i = j
        return Tok("num", s[i:j], line)

    def punct(self, i: int, line: int) -> Tok:
        s = self.s
        if s.startswith("<::", i) and s[i + 3 : i + 4] not in (":", ">"):
            text = "<"  # std::vector<::T>: not the digraph <:
        else:
            text = next((p for p in _PUNCT if s.startswith(p, i)), s[i])
        self.i = i + len(text)
        kind = "punct" if text in _PUNCT else "other"
        return Tok(kind, _DIGRAPHS.get(text, text), line)


def lex(lines: Sequence[str], strict: bool = True) -> list[Tok | Directive]:
    return Lexer(lines, strict).run()


def label_of(opener: str, recent: Sequence[Tok]) -> str:
    """What a bracket opens: "namespace A", "inline namespace B", 'extern "C"', or the bracket."""
    if opener != "{":
        return opener
    if len(recent) >= 2 and recent[-2].text == "extern" and recent[-1].kind == "str":
        return "extern " + recent[-1].text
    m = _NAMESPACE.search(" ".join(t.text for t in recent[-12:]))
    return m.group(1) if m else "{"


def harness_context(lines: Sequence[str]) -> list[str]:
    """The labels of the brackets open where the harness's lines end (a region's start)."""
    stack: list[str] = []
    recent: list[Tok] = []
    try:
        items = lex(lines, strict=False)
    except Refused:
        return stack
    for t in items:
        if isinstance(t, Directive):
            continue
        if t.text in OPENERS:
            stack.append(label_of(t.text, recent))
        elif t.text in CLOSERS and stack:
            stack.pop()
        recent = (recent + [t])[-12:]
    return stack


@dataclass
class _Open:
    char: str
    label: str
    line: int
    harness: bool = False  # opened before the block
    attr: bool = False  # the brackets of an attribute
    reopen: bool = False  # a namespace the block closed and opens again


@dataclass
class _Group:
    """An #if of the block, while its groups are read."""

    line: int
    entry: set  # the possible last words before it
    brackets: list
    results: set = field(default_factory=set)
    has_else: bool = False


@dataclass
class Scope:
    """What an accepted block needs around it."""

    names: list = field(default_factory=list)  # macros it #defines or #undefs, in order
    replay: list = field(default_factory=list)  # its #define/#undef/#if... lines, for the exercise's later blocks
    includes: list = field(default_factory=list)  # its <headers>


IncludeCheck = Callable[[str], str]  # header -> "" when it may be included, else why not


class BlockChecker:
    """The rules over one block's tokens (module docstring). Raises Refused."""

    def __init__(
        self,
        body: bool,
        context: Sequence[str] = (),
        defined: Iterable[str] = (),
        harness: MacroIndex | None = None,
        include_check: IncludeCheck | None = None,
    ) -> None:
        self.body, self.context = body, list(context)
        self.stack = [_Open("{" if c not in OPENERS else c, c, -1, harness=True) for c in context]
        self.defined, self.harness = set(defined), harness or MacroIndex()
        self.include_check = include_check or (lambda h: "")
        self.scope = Scope()
        self.groups: list[_Group] = []
        self.last: set[tuple[str, int]] = {("end", -1)}
        self.recent: list[Tok] = []
        self.closed_at: int | None = None  # the line of the first `}` of a namespace of the harness's

    def check(self, items: Sequence[Tok | Directive]) -> Scope:
        self.harness_uses([t for t in items if isinstance(t, Tok)], set())
        for it in items:
            if isinstance(it, Directive):
                self.directive(it)
            else:
                self.code(it)
        self.finish()
        return self.scope

    # -- words ---------------------------------------------------------------------------------
    def words(self, tok: Tok, in_attr: bool, in_define: bool) -> None:
        if tok.kind == "str" and SECTION_NAME.search(tok.text):
            raise Refused(tok.line, f"the section name {SECTION_NAME.search(tok.text).group(0)}")
        if tok.text == "##":
            raise Refused(tok.line, "token pasting (##): it can build names this check cannot see")
        if tok.kind != "id":
            return
        if tok.text in FORBIDDEN:
            raise Refused(tok.line, FORBIDDEN[tok.text])
        if tok.text in ATTR_DENY and (in_attr or in_define):
            raise Refused(
                tok.line, f"the attribute {tok.text} (no static constructors, sections, aliases or weak symbols)"
            )

    def harness_uses(self, toks: Sequence[Tok], params: set) -> None:
        """Each use of a dangerous harness macro among toks (a body with `params`), judged with its
        arguments (MacroIndex.use)."""
        for k, t in enumerate(toks):
            if t.kind == "id" and t.text in self.harness.kinds:
                why = self.harness.use(t.text, _call_args(toks, k + 1), params)
                if why:
                    raise Refused(t.line, f"it {why[1]} (a macro of the harness)")

    # -- code ----------------------------------------------------------------------------------
    def code(self, tok: Tok) -> None:
        self.words(tok, any(o.attr for o in self.stack), False)
        if tok.text in OPENERS:
            self.open(tok)
        elif tok.text in CLOSERS:
            self.close(tok)
        if tok.text == "namespace" and self.recent and self.recent[-1].text == "using" and self.at_harness_scope():
            raise Refused(
                tok.line,
                "`using namespace` at file scope changes what the harness's later code means "
                "(put it inside a function, or use a namespace alias)",
            )
        self.recent = (self.recent + [tok])[-12:]
        ends = tok.text in (";", "}") or (tok.text == "{" and self.stack[-1].reopen)
        self.last = {("end" if ends else tok.text, tok.line)}

    def at_harness_scope(self) -> bool:
        return not self.body and all(o.harness or o.reopen for o in self.stack)

    def open(self, tok: Tok) -> None:
        prev = self.recent[-1] if self.recent else None
        attr = tok.text == "(" and prev is not None and prev.text in ATTR_WORDS
        if tok.text == "[" and prev is not None and prev.text == "[" and self.stack and self.stack[-1].char == "[":
            self.stack[-1].attr = attr = True  # [[ ... ]]
        label = label_of(tok.text, self.recent)
        at = len(self.stack)
        reopen = tok.text == "{" and at < len(self.context) and self.context[at] == label and label != "{"
        self.stack.append(_Open(tok.text, label, tok.line, attr=attr, reopen=reopen))

    def close(self, tok: Tok) -> None:
        if not self.stack:
            raise Refused(tok.line, f"`{tok.text}` closes a bracket the block did not open")
        top = self.stack[-1]
        if top.harness:
            if self.body:
                raise Refused(tok.line, f"`{tok.text}` closes the function this block is the body of")
            if tok.text != "}" or not top.label.startswith(("namespace", "inline namespace", "extern")):
                raise Refused(tok.line, f"`{tok.text}` closes a bracket the harness opened")
            self.closed_at = tok.line if self.closed_at is None else self.closed_at
        elif top.char != CLOSERS[tok.text]:
            raise Refused(tok.line, f"`{tok.text}` closes the `{top.char}` of line {top.line + 1}")
        self.stack.pop()

    # -- directives ----------------------------------------------------------------------------
    def directive(self, d: Directive) -> None:
        if d.name not in DIRECTIVES:
            what = {"<line marker>": 'a line marker (# N "file")', "line": "#line"}.get(d.name, f"#{d.name}")
            raise Refused(d.line, f"the directive {what}: a block may #define, #undef, #if, #include <system headers>")
        if d.name not in ("error", "warning"):
            for t in d.toks:
                self.words(t, False, d.name == "define")
                if t.kind == "str" and "\n" in t.text:
                    raise Refused(t.line, "a raw string literal over several lines inside a directive")
            if d.name != "define":  # a #define's body is judged with its parameters (d_define)
                self.harness_uses(d.toks, set())
        getattr(self, "d_" + CONDITIONALS.get(d.name, d.name or "null"), lambda d: None)(d)
        if d.name in REPLAYED:
            self.scope.replay.append(replay_line(d))

    def d_define(self, d: Directive) -> None:
        if not d.toks or d.toks[0].kind != "id":
            raise Refused(d.line, "#define without a macro name")
        name = d.toks[0].text
        if RESERVED.search(name):
            raise Refused(
                d.line, f"#define {name}: a reserved name (__x, _X, NDEBUG belong to the compiler and libraries)"
            )
        body, params = d.toks[1:], set()
        if d.fn_like:
            close = next((k for k, t in enumerate(body) if t.text == ")"), len(body))
            params = {"__VA_ARGS__" if t.text == "..." else t.text for t in body[1:close] if t.text != ","}
            body = body[close + 1 :]
        if not balanced([t.text for t in body]):
            raise Refused(d.line, f"the macro {name} opens or closes a bracket it does not close or open")
        if params & _attribute_names(body):
            raise Refused(d.line, f"the macro {name} makes an attribute's name of its arguments")
        self.harness_uses(body, params)
        self.defined.add(name)
        self.note(name)

    def d_undef(self, d: Directive) -> None:
        if not d.toks or d.toks[0].kind != "id":
            raise Refused(d.line, "#undef without a macro name")
        name = d.toks[0].text
        if name not in self.defined:
            raise Refused(d.line, f"the block #undefs {name}, which it did not define")
        self.note(name)

    def note(self, name: str) -> None:
        if name not in self.scope.names:
            self.scope.names.append(name)

    def d_include(self, d: Directive) -> None:
        first = d.toks[0] if d.toks else None
        if first is None or first.kind != "header" or not first.text.endswith(">"):
            how = "a quoted #include" if first is not None and first.kind == "str" else "a computed #include"
            raise Refused(d.line, f"{how}: a block may include <headers> of the system and the CUDA toolkit only")
        if len(d.toks) > 1:
            raise Refused(d.line, f"tokens after #include {first.text}")
        header = first.text[1:-1]
        why = header_problem(header) or self.include_check(header)
        if why:
            raise Refused(d.line, f"#include <{header}>: {why}")
        self.scope.includes.append(header)

    def d_pragma(self, d: Directive) -> None:
        words = [t.text for t in d.toks[:3]]
        if not words or words[0] not in PRAGMAS:
            what = " ".join(words) if words else "(empty)"
            raise Refused(d.line, f"#pragma {what}: a block may use #pragma unroll, nounroll and omp only")
        if (
            words[0] == "omp"
            and len(words) > 1
            and (words[1] in OMP_DENY or words[1:] in (["declare", "target"], ["declare", "variant"]))
        ):
            raise Refused(d.line, f"#pragma {' '.join(words)}: it reaches past the block")
        self.last = {("#pragma", d.line)}

    def d_open(self, d: Directive) -> None:
        self.groups.append(_Group(d.line, set(self.last), self.brackets()))

    def d_else(self, d: Directive) -> None:
        g = self.group_end(d)
        self.last = set(g.entry)
        g.has_else = g.has_else or d.name == "else"

    def d_end(self, d: Directive) -> None:
        g = self.group_end(d)
        self.last = g.results | (set() if g.has_else else g.entry)
        self.groups.pop()

    def group_end(self, d: Directive) -> _Group:
        if not self.groups:
            raise Refused(d.line, f"#{d.name} without its #if in the block")
        g = self.groups[-1]
        if self.brackets() != g.brackets:
            raise Refused(
                d.line, f"the brackets of the #if group of line {g.line + 1} are unbalanced at this #{d.name}"
            )
        g.results |= self.last
        return g

    def brackets(self) -> list[tuple[str, str]]:
        return [(o.char, o.label) for o in self.stack]

    def finish(self) -> None:
        if self.groups:
            raise Refused(self.groups[-1].line, "an #if without its #endif in the block")
        if [o.label for o in self.stack] != self.context:
            mine = [o for o in self.stack if not o.harness]
            if len(self.stack) > len(self.context) or (mine and not mine[-1].reopen):
                o = mine[-1]
                raise Refused(o.line, f"the `{o.char}` opened here is never closed in the block")
            kept = sum(1 for o in self.stack if o.harness)
            want = ", ".join(f"{c} {{" for c in self.context[kept:])
            raise Refused(
                self.closed_at or 0, f"it closes namespaces it does not reopen (reopen them one by one: {want})"
            )
        bad = sorted((line, w) for w, line in self.last if w != "end")
        if bad:
            line, w = bad[-1]
            if w == "#pragma":
                raise Refused(line, "a #pragma after its last statement would apply to the harness's code")
            raise Refused(line, f"its last word `{w}` would join the harness's next line (end with ; or }})")


def balanced(texts: Sequence[str]) -> bool:
    stack = []
    for t in texts:
        if t in OPENERS:
            stack.append(t)
        elif t in CLOSERS and (not stack or stack.pop() != CLOSERS[t]):
            return False
    return not stack


def replay_line(d: Directive) -> str:
    toks = [t.text for t in d.toks]
    if d.fn_like:  # NAME(params) stays glued: a function-like macro
        close = toks.index(")") if ")" in toks else len(toks) - 1
        toks = ["".join(toks[: close + 1])] + toks[close + 1 :]
    return " ".join([f"#{d.name}"] + toks)


def header_problem(header: str) -> str:
    if not _HEADER.match(header):
        return "not a plain header name (no absolute path, no .., no blanks)"
    return ""


def check_lines(lines: Sequence[str], checker: BlockChecker) -> Scope:
    """The block's lines checked as text (characters, the last line) and as tokens. Raises Refused."""
    for k, line in enumerate(lines):
        body = line[:-1] if line.endswith("\r") else line
        m = _CONTROL.search(body)
        if m:
            raise Refused(k, f"the control character {m.group(0)!r} (a compiler may read it as a line break)")
        m = _TRIGRAPH.search(body)
        if m:
            raise Refused(k, f"the trigraph {m.group(0)}")
    if lines and _ENDS_SPLICED.search(lines[-1]):
        raise Refused(
            len(lines) - 1, "its last line ends in a line continuation (\\): it would join the harness's next line"
        )
    return checker.check(lex(lines))


# -- includes ------------------------------------------------------------------------------------


@functools.lru_cache(maxsize=None)
def system_include_dirs() -> tuple[str, ...]:
    """The host compiler's own <...> search path and the CUDA toolkit's include directories."""
    dirs: list[str] = []
    cxx = shutil.which("c++") or shutil.which("g++")
    if cxx:
        try:
            p = subprocess.run([cxx, "-xc++", "-E", "-v", "-"], input="", capture_output=True, text=True, timeout=60)
            text = p.stderr.split("#include <...> search starts here:", 1)[-1].split("End of search list.", 1)[0]
            dirs += [line.strip() for line in text.split("\n") if line.startswith(" ")]
        except (OSError, subprocess.TimeoutExpired):
            pass
    nvcc = shutil.which("nvcc") or "/usr/local/cuda/bin/nvcc"
    if os.path.exists(nvcc):
        cuda = os.path.dirname(os.path.dirname(os.path.realpath(nvcc)))
        dirs += [os.path.join(cuda, "include"), os.path.join(cuda, "include", "cccl")]
        dirs += sorted(glob.glob(os.path.join(cuda, "targets", "*", "include")))
        dirs += sorted(glob.glob(os.path.join(cuda, "targets", "*", "include", "cccl")))
    out = []
    for d in dirs:
        r = os.path.realpath(d)
        if os.path.isdir(r) and r not in out:
            out.append(r)
    return tuple(out)


@functools.lru_cache(maxsize=16)
def course_headers(root: str) -> frozenset:
    """Every tail of every source path of the course tree ("a/include/a/x.hpp", "include/a/x.hpp",
    "a/x.hpp", "x.hpp"): an <include> naming one could resolve there through the course's -I."""
    tails = set()
    for base, dirs, names in os.walk(root):
        dirs[:] = [d for d in dirs if not d.startswith(".") and d not in ("build", "results", "data")]
        for n in names:
            parts = os.path.relpath(os.path.join(base, n), root).split(os.sep)
            tails.update("/".join(parts[k:]) for k in range(len(parts)))
    return frozenset(tails)


def include_checker(root: str, dirs: Sequence[str] | None = None) -> IncludeCheck:
    """header -> "" when <header> resolves in the system's or the toolkit's include directories to a
    regular file and names nothing of the course tree `root`; else why not."""

    def check(header: str) -> str:
        if header in course_headers(root):
            return "a file of the course tree (a block includes the system's and the toolkit's headers only)"
        for d in system_include_dirs() if dirs is None else dirs:
            p = os.path.join(d, header)
            try:
                if stat.S_ISREG(os.stat(p).st_mode):
                    return ""
            except OSError:
                continue
        return "not a header of the system or the CUDA toolkit"

    return check


# -- scoping -------------------------------------------------------------------------------------


def scope_lines(lines: Sequence[str], student_line: int, scope: Scope, earlier: Sequence[Scope] = ()) -> list[str]:
    """A block's lines with its macros (and its exercise's earlier blocks' in the file) scoped to it:
    push_macro before, the earlier blocks' directives replayed, #line to the student's own line
    numbers, then #undef and pop_macro, and LINE_RESTORE (fix_lines numbers it)."""
    names: list[str] = []
    for s in list(earlier) + [scope]:
        names += [n for n in s.names if n not in names]
    head = [f'#pragma push_macro("{n}")' for n in names] + [x for s in earlier for x in s.replay]
    tail = [x for n in names for x in (f"#undef {n}", f'#pragma pop_macro("{n}")')]
    return head + [f"#line {student_line}"] + list(lines) + tail + [LINE_RESTORE]


def fix_lines(text: str) -> str:
    """The spliced file with each LINE_RESTORE numbered as the line after it really is."""
    if LINE_RESTORE not in text:
        return text
    lines = text.split("\n")
    for i, line in enumerate(lines):
        if line == LINE_RESTORE:
            lines[i] = f"#line {i + 2}"
    return "\n".join(lines)


# -- the harness's macros ------------------------------------------------------------------------


@dataclass
class _Macro:
    params: list | None  # None: object-like; "__VA_ARGS__" for ...
    body: list  # [Tok]


def parse_defines(text: str) -> dict[str, list[_Macro]]:
    """Every definition of every macro in a preprocessor's `-dD` output (or any source)."""
    out: dict[str, list[_Macro]] = {}
    for line in text.split("\n"):
        if not line.startswith("#define "):
            continue
        try:
            items = lex([line], strict=False)
        except Refused:
            continue
        d = items[0] if items and isinstance(items[0], Directive) else None
        if d is None or not d.toks or d.toks[0].kind != "id":
            continue
        body, params = d.toks[1:], None
        if d.fn_like:
            close = next((k for k, t in enumerate(body) if t.text == ")"), len(body))
            params = ["__VA_ARGS__" if t.text == "..." else t.text for t in body[1:close] if t.text != ","]
            body = body[close + 1 :]
        out.setdefault(d.toks[0].text, []).append(_Macro(params, body))
    return out


# How a macro is dangerous: in every use (HARD), or through the arguments it is given (PASTE: it
# pastes them into a name; ATTR: it makes them an attribute's name).
HARD, PASTE, ATTR = "hard", "paste", "attr"


@dataclass
class _Def:
    """One definition, digested."""

    params: set
    body: list  # [Tok]
    chains: list  # its ## chains: [[(is a parameter, text)]]
    uses: list  # (position in body, identifier) of the identifiers that are not parameters


def _digest(m: _Macro) -> _Def:
    params = set(m.params or ())
    uses = [(k, t.text) for k, t in enumerate(m.body) if t.kind == "id" and t.text not in params]
    return _Def(params, m.body, _chains(m), uses)


def _direct(m: _Macro) -> tuple[str, str]:
    """(kind, why) a definition is dangerous in itself, or ("", "")."""
    ids = {t.text for t in m.body if t.kind == "id"}
    for w in sorted(ids & (set(FORBIDDEN) | ATTR_DENY)):
        return HARD, f"expands to {w}"
    if not balanced([t.text for t in m.body]):
        return HARD, "opens or closes a bracket"
    if set(m.params or ()) & _attribute_names(m.body):
        return ATTR, "builds an attribute from its arguments"
    return "", ""


def _attribute_names(body: Sequence[Tok]) -> set:
    """The words at the top level of the body's __attribute__((...)) and [[...]] lists."""
    out, depth, k = set(), None, 0
    while k < len(body):
        t = body[k].text
        if depth is None and t in ATTR_WORDS and k + 1 < len(body) and body[k + 1].text == "(":
            depth, k = 0, k + 1
        elif depth is None and t == "[" and k + 1 < len(body) and body[k + 1].text == "[":
            depth, k = 1, k + 1
        if depth is not None:
            t = body[k].text
            depth += 1 if t in OPENERS else -1 if t in CLOSERS else 0
            if depth == 2 and body[k].kind == "id":
                out.add(t)
            if depth <= 0:
                depth = None
        k += 1
    return out


def _chains(m: _Macro) -> list[list[tuple[bool, str]]]:
    """The ## chains of a definition: each a list of (is a parameter, text) operands."""
    chains, k, body = [], 0, m.body
    params = set(m.params or ())
    while k < len(body):
        if k + 2 < len(body) and body[k + 1].text == "##":
            chain = [(body[k].text in params, body[k].text)]
            while k + 2 < len(body) and body[k + 1].text == "##":
                chain.append((body[k + 2].text in params, body[k + 2].text))
                k += 2
            chains.append(chain)
        k += 1
    return chains


def _split_args(args: Sequence[Tok]) -> list[list[Tok]]:
    out: list[list[Tok]] = [[]]
    depth = 0
    for t in args:
        if t.text == "," and depth == 0:
            out.append([])
            continue
        depth += 1 if t.text in OPENERS else -1 if t.text in CLOSERS else 0
        out[-1].append(t)
    return out


def _formed(ms: Sequence[_Macro], args: Sequence[Tok]) -> set:
    """The names the ## chains of a macro's definitions make of fixed arguments."""
    out, values = set(), [[t.text for t in v] for v in _split_args(args)]
    for m in ms:
        given = dict(zip(m.params or (), values))
        if m.params and m.params[-1] == "__VA_ARGS__":
            rest = values[len(m.params) - 1 :]
            given["__VA_ARGS__"] = [x for k, v in enumerate(rest) for x in ([","] if k else []) + v]
        for chain in _chains(m):
            out.add("".join("".join(given.get(text, [])) if is_param else text for is_param, text in chain))
    return out


def _top_level_words(args: Sequence[Tok]) -> set:
    """The identifiers of a call's arguments outside any bracket of their own (an attribute's name
    where the macro makes its argument one; launch_bounds(n) keeps n an argument)."""
    out, depth = set(), 0
    for t in args:
        if depth == 0 and t.kind == "id":
            out.add(t.text)
        depth += 1 if t.text in OPENERS else -1 if t.text in CLOSERS else 0
    return out


@dataclass
class MacroIndex:
    """The dangerous macros among a set of definitions (`-dD` output): name -> (kind, why). A macro
    is dangerous when it expands to asm, _Pragma, __has_include or a denied attribute, opens or
    closes a bracket (HARD, in every use), or makes a name of its arguments: pastes them into one
    of those names or a dangerous macro's (PASTE), makes them an attribute's name (ATTR), or passes
    its own arguments on to such a macro. A PASTE or ATTR macro may still be used with arguments
    that make nothing dangerous: use() judges each use (INT64_C(5), __launch_bounds__(256))."""

    kinds: dict = field(default_factory=dict)
    defs: dict = field(default_factory=dict)  # name -> [_Macro] of the macros with kinds

    @classmethod
    def build(cls, defs: Mapping[str, Sequence[_Macro]]) -> MacroIndex:
        index = cls(defs=dict(defs))
        digested = {n: [_digest(m) for m in ms] for n, ms in defs.items()}
        index.seed()
        users: dict[str, set] = {}
        for name, ds in digested.items():
            for used in {u for d in ds for _, u in d.uses}:
                users.setdefault(used, set()).add(name)
        pasting = {n for n, ds in digested.items() if any(d.chains for d in ds)}
        todo = set(defs)
        while todo:
            targets = index.targets()
            changed = set()
            for name in sorted(todo):
                if index.kinds.get(name, ("",))[0] == HARD:
                    continue
                k = next((x for x in (index._indirect(d, targets) for d in digested[name]) if x), None)
                if k and (name not in index.kinds or (k[0] == HARD and index.kinds[name][0] != HARD)):
                    index.kinds[name] = k
                    changed.add(name)
            todo = ({u for n in changed for u in users.get(n, ())} | pasting) if changed else set()
        index.defs = {n: list(defs[n]) for n in index.kinds if n in defs}
        return index

    def seed(self) -> None:
        """The kinds of the definitions that are dangerous in themselves."""
        for name, ms in self.defs.items():
            for m in ms:
                k = _direct(m)
                if k[0] and (name not in self.kinds or k[0] == HARD):
                    self.kinds[name] = k

    @classmethod
    def from_text(cls, text: str) -> MacroIndex:
        return cls.build(parse_defines(text))

    def merged(self, other: MacroIndex) -> MacroIndex:
        return MacroIndex({**other.kinds, **self.kinds}, {**other.defs, **self.defs})

    def targets(self) -> list[str]:
        return sorted(set(FORBIDDEN) | ATTR_DENY | set(ATTR_WORDS) | set(self.kinds))

    def _indirect(self, d: _Def, targets: Sequence[str]) -> tuple[str, str] | None:
        for chain in d.chains:
            if not any(is_param for is_param, _ in chain):
                formed = "".join(text for _, text in chain)
                if formed in targets:
                    return HARD, f"pastes together {formed}"
                continue
            rx = re.compile("".join(r"[\w$]*" if is_param else re.escape(text) for is_param, text in chain))
            hit = next((t for t in targets if rx.fullmatch(t)), None)
            if hit:
                return PASTE, f"pastes its arguments into names such as {hit}"
        for k, used in d.uses:
            if used in self.kinds:
                why = self.use(used, _call_args(d.body, k + 1), d.params)
                if why:
                    return why
        return None

    def use(self, name: str, args: list[Tok] | None, params: set = frozenset()) -> tuple[str, str] | None:
        """(kind, why) a use of the dangerous macro `name` with `args` (None: not called here, its
        arguments come from elsewhere) is dangerous, in a body whose parameters are `params`; None
        when it is not."""
        kind, why = self.kinds[name]
        why = why.split(", which ")[0]  # one step of the chain is enough to say why
        if kind == HARD:
            return HARD, f"uses {name}, which {why}"
        if args is None:
            return kind, f"uses {name}, which {why}, without its arguments"
        if kind == ATTR:
            words = _top_level_words(args)
            if words & params:
                return ATTR, f"passes its arguments to {name}, which {why}"
            bad = sorted(words & (ATTR_DENY | {n for n, (k, _) in self.kinds.items() if k == HARD}))
            return (HARD, f"makes {bad[0]} an attribute through {name}") if bad else None
        if any(a.text in params for a in args):
            return PASTE, f"passes its arguments to {name}, which {why}"
        direct = [m for m in self.defs.get(name, ()) if _chains(m)]
        if not direct:
            return HARD, f"uses {name}, which {why}"
        made = sorted(_formed(direct, args) & set(self.targets()))
        return (HARD, f"pastes together {made[0]} through {name}") if made else None


def _call_args(body: Sequence[Tok], k: int) -> list[Tok] | None:
    """The tokens of a call's arguments starting at body[k] == "(", or None where the call's
    arguments would come from outside the body (no "(", or no closing one)."""
    if k >= len(body) or body[k].text != "(":
        return None
    depth = 0
    for j in range(k, len(body)):
        depth += 1 if body[j].text == "(" else -1 if body[j].text == ")" else 0
        if depth == 0:
            return list(body[k + 1 : j])
    return None


def _preprocess_command(command: Sequence[str], source: str, device_arch: str | None) -> list[str]:
    """An object's compile command turned into `-E -dD` of `source` (to stdout)."""
    cmd, skip = [], False
    for k, tok in enumerate(command):
        if skip:
            skip = False
            continue
        if tok in ("-o", "-MF", "-MT", "-MQ"):
            skip = True
            continue
        if tok in ("-c", "-MD", "-MMD") or (k > 0 and tok.endswith((".cu", ".cpp", ".cc", ".cxx"))):
            continue
        cmd.append(tok)
    nvcc = os.path.basename(cmd[0]).startswith("nvcc")
    cmd += ["-E", "-Xcompiler", "-dD"] if nvcc else ["-E", "-dD"]
    if nvcc and device_arch:
        cmd.append(f"-D__CUDA_ARCH__={device_arch}")
    return cmd + [source]


def preprocess_defines(command: Sequence[str], cwd: str, source: str, timeout: int = 300) -> str:
    """The `#define` lines a compile command's preprocessor sees for `source` (host pass and, for
    nvcc, a device pass): "" when it fails."""
    out = []
    nvcc = os.path.basename(command[0]).startswith("nvcc")
    for arch in ("900",) if nvcc else ():
        out.append(_run_defines(_preprocess_command(command, source, arch), cwd, timeout))
    out.append(_run_defines(_preprocess_command(command, source, None), cwd, timeout))
    return "\n".join(out)


def _run_defines(cmd: list[str], cwd: str, timeout: int) -> str:
    try:
        p = subprocess.run(cmd, cwd=cwd, capture_output=True, text=True, errors="replace", timeout=timeout)
    except (OSError, subprocess.TimeoutExpired):
        return ""
    return "\n".join(line for line in p.stdout.split("\n") if line.startswith("#define "))


class HarnessMacros:
    """The dangerous macros a block could use: those of the translation units that include the
    exercise files (the instructor's own compile commands; one index over all of them), and those
    of each header a block includes (preprocessed once per job and compiler, outside any student
    code)."""

    def __init__(self, commands: Mapping[str, tuple[list[str], str, str]], workers: int = 8) -> None:
        self.commands = dict(commands)  # exercise file -> (compile command, its directory, its source)
        self.workers = workers
        self._base: MacroIndex | None = None
        self.headers: dict[tuple[bool, tuple[str, ...]], MacroIndex] = {}
        self.lock = threading.Lock()  # the students prepared at once share one index

    def base(self) -> MacroIndex:
        with self.lock:
            return self._build_base()

    def _build_base(self) -> MacroIndex:
        if self._base is None:
            units = sorted({(tuple(c), d, src) for c, d, src in self.commands.values()})
            with cf.ThreadPoolExecutor(max_workers=max(1, self.workers)) as pool:
                texts = list(pool.map(lambda u: preprocess_defines(list(u[0]), u[1], u[2]), units))
            lines = sorted({line for t in texts for line in t.split("\n")})
            self._base = MacroIndex.from_text("\n".join(lines))
        return self._base

    def for_file(self, path: str, headers: Sequence[str] = ()) -> MacroIndex:
        """The index for a block of exercise file `path` that includes `headers`."""
        if not headers or path not in self.commands:
            return self.base()
        return self.base().merged(self.headers_index(path, tuple(sorted(set(headers)))))

    def headers_index(self, path: str, headers: tuple[str, ...]) -> MacroIndex:
        """The macros of a block's headers, all in one preprocessor run (one per set of headers and
        compiler in a job, whatever the class includes)."""
        cmd, cwd, src = self.commands[path]
        key = (os.path.basename(cmd[0]).startswith("nvcc"), headers)
        with self.lock:
            if key not in self.headers:
                with tempfile.TemporaryDirectory() as d:
                    f = os.path.join(d, "headers" + (os.path.splitext(src)[1] or ".cpp"))
                    with open(f, "w", encoding="utf-8") as fh:
                        fh.write("".join(f"#include <{h}>\n" for h in headers))
                    self.headers[key] = MacroIndex.from_text(preprocess_defines(cmd, cwd, f))
            return self.headers[key]


def harness_macros(plan: object, files: Iterable[str], workers: int = 8) -> HarnessMacros:
    """A HarnessMacros over a runner_build.Plan: per exercise file, the first translation unit of the
    build that depends on it (its own, for a .cu or .cpp)."""
    commands = {}
    for f in files:
        src = os.path.join(plan.root, f)
        rules = sorted(plan.objects.values(), key=lambda r: (r.source != src, r.source))
        rule = next((r for r in rules if r.source == src or src in r.deps), None)
        if rule is not None:
            commands[f] = (list(rule.command), rule.directory, rule.source)
    return HarnessMacros(commands, workers)


# -- a submission ------------------------------------------------------------------------------


class Guard:
    """The blocks of one submission, checked before the splice (an exercise refused in one file is
    stubbed in all of them) and scoped in it."""

    def __init__(self, root: str, macros: HarnessMacros | None = None, dirs: Sequence[str] | None = None) -> None:
        self.root, self.macros = root, macros
        self.include_check = include_checker(root, dirs)
        self.refused: dict[str, str] = {}  # exercise key -> the refusal
        self.scopes: dict[tuple[str, int], Scope] = {}  # (file, the block's BEGIN line) -> its scope
        self.earlier: dict[tuple[str, int], list[Scope]] = {}
        self._key: dict[tuple[str, int], str] = {}

    def check_files(
        self, assignment: object, submitted: Mapping[str, Mapping[str, list]], stubbed: Iterable[str] = ()
    ) -> dict[str, str]:
        """Checks every block of a submission ({exercise file: {exercise: [StudentRegion]}}), each
        against the harness around its region in the instructor's file (checker_splice.Assignment),
        in the order the splice takes them; {exercise key: refusal}."""
        for f in assignment.exercise_files():
            text = assignment.files[f]
            lines = text.split("\n")
            queues = {k: list(v) for k, v in submitted.get(f, {}).items()}
            for r in assignment.regions(f, text):
                if not assignment.assigned(f, r) or not queues.get(r.exercise):
                    continue
                b = queues[r.exercise].pop(0)
                if r.key not in stubbed:
                    self.check(f, r.key, b, r.body, harness_context(lines[: r.first]))
        return dict(self.refused)

    def check(self, path: str, key: str, block: object, body: bool, context: Sequence[str]) -> None:
        """Checks one block (a StudentRegion: .first, .lines) of exercise `key` in file `path`,
        after the exercise's earlier blocks of the file."""
        if key in self.refused:
            return
        earlier = [s for (f, _), s in self.scopes.items() if f == path and self._key.get((f, _)) == key]
        defined = {n for s in earlier for n in s.names}
        harness = self.macros.for_file(path) if self.macros else None
        checker = BlockChecker(body, context, defined, harness, self.include_check)
        try:
            scope = check_lines(block.lines, checker)
            if self.macros and scope.includes:  # the macros its headers bring
                harness = self.macros.for_file(path, scope.includes)
                scope = check_lines(block.lines, BlockChecker(body, context, defined, harness, self.include_check))
        except Refused as e:
            self.refused[key] = str(Refusal(path, block.first + 2 + e.line, e.what))
            return
        self.scopes[(path, block.first)] = scope
        self._key[(path, block.first)] = key
        self.earlier[(path, block.first)] = earlier

    def lines(self, path: str, block: object) -> list[str]:
        """The block's lines as spliced: scoped (after check())."""
        scope = self.scopes[(path, block.first)]
        return scope_lines(block.lines, block.first + 2, scope, self.earlier[(path, block.first)])
