"""What a student's objects may define, reference and run before main: the object rules.

Every object compiled from a spliced file (an exercise file, or a harness file that includes an
exercise header) is compared with the baseline of the same translation unit: the instructor's
object and the handout's stubbed one. A rule broken is a refusal that names the symbol and the rule:
  checker    a reference to a symbol of the harness's reference and checker files (rubric.toml
             [grading] checker_files) or to a harness function or table that reaches one (a call
             graph over the instructor's objects, from their code and data relocations), unless
             the baseline references it too (compact_with_scan may call the reference scan: its
             solution does)
  process    a reference to a process, dynamic-loading, environment or introspection call that no
             exercise needs (FORBIDDEN_CALLS)
  interpose  a definition of a name the baseline does not define that the build defines or uses
             elsewhere (another instructor object, a library the drivers link, the linker's own
             names): a strong one replaces the harness's for the whole process; a weak one may
             replace a copy the checker compiled (a template the checker alone instantiates, or
             anything that reaches the checker). Weak instantiations of libraries' templates
             (std::, cub::, ...) and of the course's shared templates are everyone's
  init       more start-up or shut-down entries (.init_array, .ctors, .preinit_array,
             .fini_array, .dtors, .init, .fini) than the baseline, or start-up code that reaches a
             name the baseline's does not (a global object whose constructor runs before main).
             nvcc's registration of the fatbinary (one .init_array entry in every .cu object) is
             compiled from the kernels' declarations, not the student's code, and is left out
Statically, on the objects: nothing runs, and no GPU is needed."""

from __future__ import annotations

import fnmatch
import os
import re
import subprocess
from dataclasses import dataclass, field
from typing import TYPE_CHECKING, Iterable, Sequence

from .checker_kernels import demangle, library_of, qualified_name, stable_name, stub_kernels

if TYPE_CHECKING:
    from judge.runner_build import Plan


# Calls no exercise needs (a kernel's launch code, a CPU loop, OpenMP, std::thread and CUDA's
# streams and events use none of them), each a way out of the version's own work:
# - running other code: the instructor's prebuilt driver or a classmate's (fork/exec/spawn/system/
#   popen), loading a library or looking up the harness's functions by name (dl*), cloning
# - reading the grader's environment (getenv: COURSE_GRADING_SECRET, the paths of the grader's
#   files; environ is the same table without a call)
# - reaching into the process itself: ptrace, raw syscalls, other processes' memory, prctl,
#   rewriting code pages (mprotect, mmap), signal handlers that swallow the harness's aborts, and
#   ending the process before the checker has run (exit, _exit, quick_exit, atexit hooks)
def _words(text: str) -> frozenset[str]:
    return frozenset(text.split())


FORBIDDEN_CALLS = _words(
    """
    dlopen dlmopen dlsym dlvsym dladdr dladdr1 dlinfo dlclose dl_iterate_phdr
    fork vfork clone clone3 execve execveat execv execvp execvpe execl execlp execle fexecve
    system popen posix_spawn posix_spawnp
    getenv secure_getenv __secure_getenv setenv putenv unsetenv clearenv environ __environ _environ
    ptrace syscall process_vm_readv process_vm_writev prctl
    mprotect pkey_mprotect mmap mmap64 mremap memfd_create
    signal sigaction sigset bsd_signal kill tgkill
    exit _exit _Exit quick_exit atexit at_quick_exit on_exit
    dup dup2 dup3 pipe pipe2 fcntl fcntl64 close_range
    """
)
FORBIDDEN_PREFIXES = ("_dl_", "__libc_dl", "cupti", "cuGetProcAddress", "cudaGetDriverEntryPoint")

# Names the linker and the C runtime define in every executable.
LINKER_NAMES = _words(
    """
    _start _init _fini main __libc_csu_init __libc_csu_fini _IO_stdin_used __data_start data_start
    __dso_handle __TMC_END__ __bss_start _edata edata _end end etext _etext __etext _DYNAMIC
    _GLOBAL_OFFSET_TABLE_ __GNU_EH_FRAME_HDR __ehdr_start __executable_start __init_array_start
    __init_array_end __fini_array_start __fini_array_end __preinit_array_start __preinit_array_end
    """
)
# Library namespaces beyond the rubric's (the standard library's, the ABI's)
STD_NAMESPACES = ("std::", "__gnu_cxx::", "__cxxabiv1::", "__gnu_debug::")
# Names every object may define: the compilers' own (exception personality, nvcc's fatbinary)
GENERATED = re.compile(r"^(DW\.ref\.|__nv_|__fatbinwrap|__cudaRegisterLinkedBinary|_GLOBAL__|__sti__)")
_DESCRIBED = re.compile(
    r"^(typeinfo name for |typeinfo for |vtable for |VTT for |construction vtable for |guard variable for "
    r"|non-virtual thunk to |virtual thunk to |covariant return thunk to |TLS init function for "
    r"|TLS wrapper function for |reference temporary #\d+ for )"
)
_INIT_SECTIONS = (".init_array", ".ctors", ".preinit_array")
_FINI_SECTIONS = (".fini_array", ".dtors")
_NOT_DATA = (".text", ".eh_frame", ".debug", ".note", ".nv", ".gcc_except_table", ".comment")
_REGISTER_ALL = "_ZL24__sti____cudaRegisterAllv"  # nvcc's start-up registration of the fatbinary
_X86_PCREL = ("PC32", "PLT32", "GOTPCREL", "GOTPCRELX", "REX_GOTPCRELX")


@dataclass
class ObjectInfo:
    """One object's symbols, start-up entries and references (names are stable_name()s; a local
    symbol's node is "#name", kept apart from every other object's)."""

    path: str
    defined: dict = field(default_factory=dict)  # global name -> "strong" | "weak"
    undefined: set = field(default_factory=set)
    entries: dict = field(default_factory=dict)  # "init" | "fini" | "code" -> count
    graph: dict = field(default_factory=dict)  # node -> {nodes it references}
    roots: list = field(default_factory=list)  # [("init" | "fini", node)]: what the start-up and shut-down entries run
    kernels: set = field(default_factory=set)  # the kernels it registers (their host-side names)

    def reach(self, roots: Iterable[str]) -> set[str]:
        """The names code from `roots` reaches inside this object and out of it."""
        seen, todo = set(), list(roots)
        while todo:
            node = todo.pop()
            if node in seen:
                continue
            seen.add(node)
            todo += [t for t in self.graph.get(node, ()) if t not in seen]
        return {n.lstrip("#") for n in seen}

    def generated(self, root: str) -> bool:
        """An entry the compilers add: nvcc's registration of the fatbinary, or a start-up function that
        only constructs <iostream>'s std::ios_base::Init (GCC < 13, in every file that includes it)."""
        return root.lstrip("#") == _REGISTER_ALL or not _own_code(self.reach([root]))

    def init_reach(self) -> set[str]:
        """The names the start-up and shut-down code reaches (the compilers' own entries left out)."""
        names = self.reach(r for _, r in self.roots if not self.generated(r))
        return {n for n in _own_code(names) if n not in self.kernels}


_IOSTREAM_INIT = _words("_ZNSt8ios_base4InitC1Ev _ZNSt8ios_base4InitD1Ev _ZStL8__ioinit __cxa_atexit __dso_handle")
_INIT_HELPERS = re.compile(r"^(_GLOBAL__sub_[ID]_|_Z41__static_initialization_and_destruction_0ii)")


def _own_code(names: Iterable[str]) -> set[str]:
    """Names less <iostream>'s start-up, the start-up functions' own names, sections, and CUDA's
    registration calls."""
    return {
        n
        for n in names
        if n not in _IOSTREAM_INIT
        and not _INIT_HELPERS.match(n)
        and not n.startswith((".", "__cudaRegister", "__cudaUnregister"))
    }


def _run(cmd: list[str]) -> str:
    return subprocess.run(cmd, capture_output=True, text=True, errors="replace").stdout


@dataclass
class _Elf:
    sections: dict  # index -> (name, size)
    by_section: dict  # section index -> [(start, end, node)]
    node_of: dict  # symbol name -> node ("#local" or the global name)


def _sections(path: str) -> dict[int, tuple[str, int]]:
    out = {}
    for m in re.finditer(
        r"^\s*\[\s*(\d+)\]\s+(\S+)\s+\S+\s+[0-9a-f]+\s+[0-9a-f]+\s+([0-9a-f]+)", _run(["readelf", "-SW", path]), re.M
    ):
        out[int(m.group(1))] = (m.group(2), int(m.group(3), 16))
    return out


def _symbols(path: str, info: ObjectInfo, elf: _Elf) -> None:
    """The symbol table: global definitions, undefined references, and each symbol's address range."""
    for line in _run(["readelf", "-sW", path]).split("\n"):
        parts = line.split()
        if len(parts) < 8 or not parts[0].endswith(":") or parts[1] == "Value":
            continue
        value, size, kind, bind, ndx, name = parts[1], parts[2], parts[3], parts[4], parts[6], parts[7]
        if kind in ("SECTION", "FILE") or not name:
            continue
        name = stable_name(name)
        local = bind == "LOCAL"
        node = "#" + name if local else name
        elf.node_of.setdefault(name, node)
        if ndx == "UND":
            if not local:
                info.undefined.add(name)
            continue
        if not local:
            info.defined[name] = "weak" if bind in ("WEAK", "UNIQUE") else "strong"
        if ndx.isdigit():
            start = int(value, 16)
            size_i = int(size, 0) if size.isdigit() or size.startswith("0x") else 0
            elf.by_section.setdefault(int(ndx), []).append((start, start + max(size_i, 1), node))


def _resolve(target: str, rtype: str, elf: _Elf, section_index: dict[str, int]) -> str | None:
    """A relocation's or a branch's target ("name", "name-0x4", ".text+0x30") as a node; None for
    anonymous data (string literals, the constant pools)."""
    m = re.match(r"^(.*?)(?:([+-])0x([0-9a-f]+))?$", target.strip())
    name, sign, off = m.group(1), m.group(2), int(m.group(3) or "0", 16)
    if name.startswith(".L"):
        return None
    if name in section_index:  # section-relative: the symbol that covers the offset
        addend = -off if sign == "-" else off
        if any(rtype.endswith(t) for t in _X86_PCREL):
            addend += 4
        for start, end, node in elf.by_section.get(section_index[name], ()):
            if start <= addend < end:
                return node
        return "#" + name  # a table without a symbol of its own: the section stands for it
    if name.startswith("."):
        return None
    name = stable_name(name)
    return elf.node_of.get(name, name)


_FUNC_HEAD = re.compile(r"^[0-9a-f]+ <(.+)>:$")
_RELOC = re.compile(r"\s[0-9a-f]+: (R_\w+)\s+(\S+)")
_BRANCH = re.compile(r"<([^>+]+)(?:\+0x[0-9a-f]+)?>")


def _code_references(path: str, info: ObjectInfo, elf: _Elf, section_index: dict[str, int]) -> None:
    """Each function's references: its relocations, and its direct branches inside its section."""
    current = None
    for line in _run(["objdump", "-dr", "-w", "--no-show-raw-insn", path]).split("\n"):
        head = _FUNC_HEAD.match(line)
        if head:
            current = elf.node_of.get(stable_name(head.group(1)), stable_name(head.group(1)))
            info.graph.setdefault(current, set())
            continue
        if current is None or not line.startswith(" "):
            continue
        rels = _RELOC.findall(line)
        if rels:
            nodes = [_resolve(target, rtype, elf, section_index) for rtype, target in rels]
        else:
            br = _BRANCH.search(line)
            nodes = [elf.node_of.get(stable_name(br.group(1)))] if br else []
        info.graph[current].update(n for n in nodes if n and n != current)


def _data_references(path: str, info: ObjectInfo, elf: _Elf, section_index: dict[str, int]) -> None:
    """Relocations outside the code: tables and vtables (their functions), and the start-up and
    shut-down arrays (their entries are the roots)."""
    section = ""
    for line in _run(["readelf", "-rW", path]).split("\n"):
        m = re.match(r"^Relocation section '\.rela?(\S+)'", line)
        if m:
            section = m.group(1)
            continue
        parts = line.split()
        if len(parts) < 7 or not re.match(r"^[0-9a-f]{8,}$", parts[0]) or section.startswith(_NOT_DATA):
            continue
        target = _resolve(f"{parts[4]}{parts[5]}0x{parts[6]}", parts[2], elf, section_index)
        if target is None:
            continue
        if section.startswith(_INIT_SECTIONS + _FINI_SECTIONS):
            info.roots.append(("init" if section.startswith(_INIT_SECTIONS) else "fini", target))
            continue
        offset = int(parts[0], 16)
        idx = section_index.get(section)
        holder = next((n for s, e, n in elf.by_section.get(idx, ()) if s <= offset < e), None) if idx else None
        info.graph.setdefault(holder or f"#{section}", set()).add(target)


def read_object(path: str) -> ObjectInfo:
    info = ObjectInfo(path=path)
    sections = _sections(path)
    elf = _Elf(sections=sections, by_section={}, node_of={})
    section_index = {}
    for idx, (name, _) in sorted(sections.items()):
        section_index.setdefault(name, idx)
    _symbols(path, info, elf)
    _code_references(path, info, elf, section_index)
    _data_references(path, info, elf, section_index)
    info.kernels = {stable_name(k) for k in stub_kernels(info.defined)}
    for name, size in sections.values():  # every entry, less the compilers' own
        kind = "init" if name.startswith(_INIT_SECTIONS) else "fini" if name.startswith(_FINI_SECTIONS) else ""
        if kind:
            info.entries[kind] = info.entries.get(kind, 0) + size // 8
        elif name in (".init", ".fini") and size:
            info.entries["code"] = info.entries.get("code", 0) + 1
    for kind, root in info.roots:
        if info.generated(root):
            info.entries[kind] -= 1
    return info


# ---- the instructor's side: computed once per job ----------------------------------------------
@dataclass
class Harness:
    """What the object rules compare a student's objects with."""

    instructor: dict = field(default_factory=dict)  # rel source -> ObjectInfo (the archived object)
    handout: dict = field(default_factory=dict)  # rel source -> ObjectInfo (the stubbed one)
    checker: dict = field(default_factory=dict)  # checker symbol -> its rel source
    reaches: dict = field(default_factory=dict)  # harness symbol -> a checker symbol it reaches
    checker_only: set = field(default_factory=set)  # weak names only the checker files instantiate
    elsewhere: dict = field(default_factory=dict)  # name -> {where the build has it: rel source, "library x"}
    strong: set = field(default_factory=set)  # names some instructor object or library defines strongly
    linked_by: dict = field(default_factory=dict)  # rel source -> {drivers that link its object}
    libraries: tuple = ()


def linked_objects(plan: Plan) -> dict[str, set[str]]:
    """{instructor object: {rubric drivers whose executable holds it}}: the archives' members and the
    objects on the drivers' own link lines."""
    out = {}
    for driver, rule in plan.drivers.items():
        for tok in rule.command:
            path = os.path.normpath(os.path.join(rule.directory, tok)) if not tok.startswith("-") else ""
            for obj in plan.archives.get(path, [path] if path.endswith(".o") and path in plan.objects else []):
                out.setdefault(obj, set()).add(driver)
    return out


@dataclass
class _Scan:
    """What build_harness gathers over the instructor's objects."""

    graph: dict = field(default_factory=dict)
    checker_strong: dict = field(default_factory=dict)
    checker_weak: set = field(default_factory=set)
    weak_outside: set = field(default_factory=set)


def _add_object(h: Harness, scan: _Scan, rel: str, info: ObjectInfo, is_checker: bool) -> None:
    for name in list(info.defined) + list(info.undefined):
        h.elsewhere.setdefault(name, set()).add(rel)
    for name, bind in info.defined.items():
        if bind == "strong":
            h.strong.add(name)
            if is_checker:
                scan.checker_strong.setdefault(name, rel)
        else:
            (scan.checker_weak if is_checker else scan.weak_outside).add(name)
    for node, targets in info.graph.items():  # a local node is its object's own
        scan.graph.setdefault(node if not node.startswith("#") else f"{rel}{node}", set()).update(
            x if not x.startswith("#") else f"{rel}{x}" for x in targets
        )


def build_harness(plan: Plan, checker_globs: Sequence[str], libraries: Sequence[str]) -> Harness:
    """The baseline of a job: the instructor's objects that the rubric's drivers link, and the
    libraries those drivers link."""
    objects = {}
    for obj, drivers in sorted(linked_objects(plan).items()):
        if os.path.exists(obj):
            rel = os.path.relpath(plan.objects[obj].source, plan.root)
            objects.setdefault(rel, (obj, set()))[1].update(drivers)
    return harness_of(objects, checker_globs, libraries, library_symbols(plan))


def harness_of(
    objects: dict[str, tuple[str, set[str]]],
    checker_globs: Sequence[str],
    libraries: Sequence[str],
    library_syms: dict[str, str],
) -> Harness:
    """objects: {rel source: (instructor object, {drivers linking it})}; library_syms: {name: where}."""
    h = Harness(libraries=tuple(libraries))
    scan = _Scan()
    for rel, (obj, drivers) in sorted(objects.items()):
        info = read_object(obj)
        h.instructor[rel] = info
        h.linked_by[rel] = set(drivers)
        _add_object(h, scan, rel, info, any(fnmatch.fnmatch(rel, g) for g in checker_globs))
    only = sorted(scan.checker_weak - scan.weak_outside)
    lib = library_names(list(scan.checker_strong) + only, libraries)
    h.checker = {n: rel for n, rel in scan.checker_strong.items() if n not in lib}
    # a template only the checker instantiates (an explicit specialization would replace it); an
    # inline function's copy is emitted or not as the optimizer likes, a template's name is the type's
    h.checker_only = {n for n, d in zip(only, demangle(only)) if n not in lib and _is_template(d)}
    h.reaches = reaching(scan.graph, h.checker)
    for name, where in library_syms.items():
        h.elsewhere.setdefault(name, set()).add(where)
        h.strong.add(name)
    for name in LINKER_NAMES:
        h.elsewhere.setdefault(name, set()).add("the linker")
        h.strong.add(name)
    return h


def reaching(graph: dict[str, set[str]], targets: Iterable[str]) -> dict[str, str]:
    """{node: a target it reaches} over graph edges (node -> what it references), global nodes only."""
    back = {}
    for node, refs in graph.items():
        for r in refs:
            back.setdefault(r, set()).add(node)
    found = {t: t for t in targets}
    todo = list(found)
    while todo:
        node = todo.pop()
        for caller in back.get(node, ()):
            if caller not in found:
                found[caller] = found[node]
                todo.append(caller)
    return {n: t for n, t in found.items() if "#" not in n and n not in targets}


def linked_libraries(plan: Plan) -> tuple[set[str], set[str]]:
    """(shared libraries the instructor's drivers load (ldd), static archives on their link lines)."""
    shared, static = set(), set()
    for rule in plan.drivers.values():
        for line in _run(["ldd", rule.output]).split("\n"):
            m = re.search(r"=>\s*(/\S+)", line)
            if m:
                shared.add(m.group(1))
        for tok in rule.command:
            path = os.path.normpath(os.path.join(rule.directory, tok))
            if tok.endswith(".a") and not path.startswith(plan.build) and os.path.isfile(path):
                static.add(path)
    return shared, static


def library_symbols(plan: Plan) -> dict[str, str]:
    """{name: "library <file>"} for what the drivers' libraries define."""
    shared, static = linked_libraries(plan)
    out = {}
    for lib in sorted(shared | static):
        cmd = ["nm", "-D", "-P", "--defined-only", lib] if lib in shared else ["nm", "-P", "-g", "--defined-only", lib]
        for line in _run(cmd).split("\n"):
            parts = line.split()
            if len(parts) >= 2 and not parts[0].endswith(":"):  # not an archive member's header
                out.setdefault(parts[0].split("@")[0], f"library {os.path.basename(lib)}")
    return out


def _is_template(demangled: str) -> bool:
    """A function template's instantiation ("T ns::f<int>(...)"), not a member of a class template."""
    d = _DESCRIBED.sub("", demangled)
    return not _DESCRIBED.match(demangled) and qualified_name(d)[1] != "" and ">(" in d.replace("> (", ">(")


def library_names(names: Sequence[str], libraries: Sequence[str]) -> set[str]:
    """The names among `names` that lie in a library namespace (demangled once, in one batch)."""
    names = sorted(set(names))
    return {n for n, d in zip(names, demangle(names)) if _library_name(d, libraries)}


def _library_name(dem: str, libraries: Sequence[str]) -> bool:
    dem = _DESCRIBED.sub("", dem)
    return bool(library_of(dem, tuple(libraries) + STD_NAMESPACES)) or dem.startswith(STD_NAMESPACES)


# ---- the rules ------------------------------------------------------------------------------------
@dataclass
class Finding:
    rule: str  # "checker" | "process" | "interpose" | "init"
    object: str  # the object's file name
    message: str

    @property
    def whole_process(self) -> bool:
        """A definition or a start-up entry acts on the whole process, whatever version runs."""
        return self.rule in ("interpose", "init")

    def __str__(self) -> str:
        return f"{self.object} {self.message} (rule '{self.rule}')"


def _baseline(h: Harness, rel: str) -> list[ObjectInfo]:
    return [b for b in (h.instructor.get(rel), h.handout.get(rel)) if b is not None]


def check_object(h: Harness, rel: str, info: ObjectInfo) -> list[Finding]:
    """The findings of the student's object of translation unit `rel`."""
    base = _baseline(h, rel)
    name = os.path.basename(info.path)
    out = _references(h, base, info, name)
    out += _definitions(h, rel, base, info, name)
    out += _start_up(base, info, name)
    return out


def _references(h: Harness, base: list[ObjectInfo], info: ObjectInfo, name: str) -> list[Finding]:
    known = set().union(*(b.undefined for b in base)) if base else set()
    new = sorted(info.undefined - known)
    out = []
    for sym, dem in zip(new, demangle(new)):
        if sym in h.checker:
            out.append(Finding("checker", name, f"calls {dem}, the harness's reference or checker ({h.checker[sym]})"))
        elif sym in h.reaches:
            via = h.reaches[sym]
            out.append(
                Finding(
                    "checker",
                    name,
                    f"calls {dem}, harness code that reaches the checker's {demangle([via])[0]} "
                    f"({h.checker.get(via, '')})",
                )
            )
        elif (sym in FORBIDDEN_CALLS or sym.startswith(FORBIDDEN_PREFIXES)) and not from_toolkit_headers(info, sym):
            out.append(Finding("process", name, f"calls {dem}, which no exercise needs"))
    return out


# The inline functions of the toolkit's headers an exercise may instantiate (thrust::device_vector
# brings NVTX's injection loader, which reads NVTX_INJECTION64_PATH and dlopen()s it): a call of
# theirs is the header's, not the student's. Not defended: an inline function of the student's own
# named like one of these (the sandbox still confines what it does).
_TOOLKIT_C = re.compile(r"^nvtx[A-Z]\w*$")
_TOOLKIT_NAMESPACES = ("cub::", "thrust::", "cuda::", "nvtx3::", "cudax::")


def from_toolkit_headers(info: ObjectInfo, sym: str) -> bool:
    """Whether every function of the object that references `sym` is an inline (weak) function of
    the toolkit's headers."""
    callers = sorted(n for n, refs in info.graph.items() if sym in refs)
    if not callers or any(info.defined.get(c) != "weak" for c in callers):
        return False
    return all(_TOOLKIT_C.match(c) or d.startswith(_TOOLKIT_NAMESPACES) for c, d in zip(callers, demangle(callers)))


def _definitions(h: Harness, rel: str, base: list[ObjectInfo], info: ObjectInfo, name: str) -> list[Finding]:
    known = set().union(*(b.defined.keys() for b in base)) if base else set()
    new = sorted(n for n in info.defined if n not in known and not GENERATED.match(n))
    out = []
    for sym, dem in zip(new, demangle(new)):
        places = sorted(h.elsewhere.get(sym, set()) - {rel})
        if not places:
            continue  # a name of the student's own
        where = next((p for p in places if sym in getattr(h.instructor.get(p), "defined", {})), places[0])
        weak = info.defined[sym] == "weak"
        if weak and _library_name(dem, h.libraries):
            continue  # a library template's instantiation: everyone's
        if weak and sym not in h.strong and sym not in h.checker_only and sym not in h.reaches:
            continue  # an instantiation of the course's shared templates (the same code everywhere)
        kind = "a weak" if weak else "a"
        out.append(
            Finding(
                "interpose", name, f"defines {dem}, {kind} definition of what {where} has: it replaces the harness's"
            )
        )
    return out


def _start_up(base: list[ObjectInfo], info: ObjectInfo, name: str) -> list[Finding]:
    out = []
    for kind, what in (("init", "start-up"), ("fini", "shut-down"), ("code", ".init/.fini code")):
        allowed = max((b.entries.get(kind, 0) for b in base), default=0)
        if info.entries.get(kind, 0) > allowed:
            out.append(
                Finding(
                    "init",
                    name,
                    f"adds {what} entries ({info.entries.get(kind, 0)}, the harness's has {allowed}): "
                    "a static constructor or destructor",
                )
            )
    known = set().union(*(b.init_reach() for b in base)) if base else set()
    extra = sorted(info.init_reach() - known)
    if extra and not out:
        dem = demangle(extra[:3])
        out.append(Finding("init", name, f"runs {', '.join(dem)} before main: a static constructor"))
    return out


# ---- a student's objects, and the versions their findings refuse ---------------------------------
def exercises_of_units(plan: Plan, exercise_files: dict[str, str], sources: Iterable[str]) -> dict[str, set[str]]:
    """{rel source: {the exercises ("sub/name") whose spliced files its translation unit includes}}."""
    spliced = {os.path.join(plan.root, f): ex for f, ex in exercise_files.items()}
    out = {}
    for rel in sources:
        deps = set()
        for obj in plan.object_of_source(rel):
            deps |= plan.objects[obj].deps
        deps.add(os.path.join(plan.root, rel))
        out[rel] = {spliced[d] for d in deps if d in spliced}
    return out


def check_student(h: Harness, objects: dict[str, str]) -> dict[str, list[Finding]]:
    """{rel source: findings} for a student's objects ({rel source: object path})."""
    return {rel: found for rel, obj in sorted(objects.items()) if (found := check_object(h, rel, read_object(obj)))}


def version_findings(
    h: Harness,
    found: dict[str, list[Finding]],
    units: dict[str, set[str]],
    exercises: set[str],
    driver: str,
) -> list[str]:
    """The findings that refuse one version: a call from a translation unit of one of its exercises,
    or a definition or start-up entry of any object its driver links (they act on the whole process)."""
    out = []
    for rel, fs in sorted(found.items()):
        mine = bool(units.get(rel, set()) & exercises)
        linked = driver in h.linked_by.get(rel, set())
        out += [str(f) for f in fs if mine or (f.whole_process and linked)]
    return out


_RULE = re.compile(r"\(rule '(checker|process|interpose|init)'\)$")


def is_refusal(finding: str) -> bool:
    """A finding of the object rules (a refusal), not of the kernel attribution."""
    return bool(_RULE.search(finding))
