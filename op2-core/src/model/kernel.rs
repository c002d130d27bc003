//! Kernels: a name and C99 source, with the parameter list read from the source so that `par_loop`
//! can check parameter count, element types and shapes against its args.

use crate::model::dtype::DType;
use crate::model::error::{Op2Error, Result};
use crate::model::names::is_c_identifier;
use std::collections::HashSet;
use std::fmt;
use std::hash::{Hash, Hasher};
use std::path::Path;
use std::sync::Arc;
use std::sync::atomic::{AtomicU64, Ordering};

/// How the runtime's kernels hand a pointer to the user's parameter, whatever its spelling
/// (`const`, arrays): through `void *` in C, CUDA's `op2_any` in C++, as it is in OpenCL (whose
/// address spaces a `void *` would lose).
/// `OP2_TYPEOF(p + 0)` is the type of pointer `p` (with its OpenCL address space), for local
/// arrays of pointers into an arg's data.
pub(crate) const PASS_MACRO: &str = "#ifndef OP2_PASS\n#if defined(__cplusplus)\n\
    #define OP2_PASS(x) op2_any{(void *)(x)}\n#define OP2_TYPEOF(x) decltype(x)\n\
    #elif defined(__OPENCL_VERSION__)\n\
    #define OP2_PASS(x) (x)\n#define OP2_TYPEOF(x) __typeof__(x)\n\
    #else\n#define OP2_PASS(x) ((void *)(x))\n#define OP2_TYPEOF(x) __typeof__(x)\n\
    #endif\n#endif\n";

/// One kernel parameter as written in the source.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct KernelParam {
    /// The parameter as written, e.g. `const double *x`.
    pub text: String,
    /// The element type, when it is a type we know (`double`, `int`, `uint64_t`, ...).
    pub dtype: Option<DType>,
    /// Levels of pointer or array indirection: 1 for `double *x` or `double x[2]`, 2 for `double **x`
    /// or `double *x[3]`.
    pub indirection: usize,
    /// The `*`s in the declaration: 1 for `double *x` and `double *x[3]`, 2 for `double **x`.
    pub pointers: usize,
    /// Each array declarator's bound, outermost first, when it is an integer literal (`None` for
    /// `[]` or a bound the parser cannot evaluate, such as a macro): `[Some(3)]` for `double *x[3]`.
    pub bounds: Vec<Option<usize>>,
    /// Whether the kernel's source names the parameter anywhere besides its declaration (in
    /// the body, or in a macro the body may use; strings and comments do not count). A
    /// parameter named nowhere else (or without a name) can be neither read nor written, so
    /// `par_loop` does not hold its type against the arg's: `void k(int *x) {}` takes any Dat,
    /// as C compilers take it. Always true when the source may name it without spelling it
    /// (token pasting, a header of the user's own) or the kernel is compiled with macros
    /// (`-D`, `-include`) of its own.
    pub used: bool,
}

struct KernelInner {
    id: u64,
    name: String,
    source: String,
    params: Option<Vec<KernelParam>>,
    identifiers: HashSet<String>,
    /// For a kernel the runtime wrote to run fused loops: the loops' kernels, in call order,
    /// each with the parameters of this kernel it is called with.
    parts: Vec<(Kernel, Vec<usize>)>,
    /// Whether `par_loop` compares its parameters' array bounds with the args.
    checks_bounds: bool,
    /// Whether the kernel reaches data by stepping the pointers it is handed (see
    /// [`Kernel::steps_pointers`]).
    steps_pointers: bool,
    /// Whether the source is C++ ([`Kernel::cpp`]).
    cpp: bool,
    /// What the compiled loops are linked with ([`Kernel::with_link_args`]).
    link_args: Vec<String>,
    /// What the loops' code is compiled with besides the backend's flags
    /// ([`Kernel::with_compile_args`]).
    compile_args: Vec<String>,
    /// Whether the kernel acts on host state outside its args ([`Kernel::with_host_effects`]).
    host_effects: bool,
}

/// A kernel: a C99 function that works on one element. Cheap to clone; kernels are not tied to a runtime.
#[derive(Clone)]
pub struct Kernel(Arc<KernelInner>);

static NEXT_KERNEL_ID: AtomicU64 = AtomicU64::new(1);

impl Kernel {
    /// A kernel named `name` (a C identifier) whose `source` defines a function of that name.
    pub fn new(name: &str, source: &str) -> Result<Self> {
        crate::model::names::check_user_name("kernel", name)?;
        let (identifiers, params) = read_source(source, name);
        crate::model::names::check_source_identifiers(
            name,
            identifiers.iter().map(String::as_str),
        )?;
        if !identifiers.contains(name) {
            return Err(Op2Error::KernelNotFound {
                kernel: name.into(),
            });
        }
        if params.is_none() && !source.contains('#') {
            // Without macros in play, a missing definition is certain; with them we cannot tell.
            return Err(Op2Error::KernelNotFound {
                kernel: name.into(),
            });
        }
        Ok(Kernel(Arc::new(KernelInner {
            id: NEXT_KERNEL_ID.fetch_add(1, Ordering::Relaxed),
            name: name.into(),
            source: source.into(),
            params,
            identifiers,
            parts: Vec::new(),
            checks_bounds: true,
            steps_pointers: false,
            cpp: false,
            link_args: Vec::new(),
            compile_args: Vec::new(),
            host_effects: false,
        })))
    }

    /// A kernel like [`Kernel::new`] whose parameters' array bounds `par_loop` does not compare
    /// with its args (element types and shapes are still checked). In a C parameter list a
    /// bound means nothing, and PyOP2 never compared it: its programs declare `double *x[2]`
    /// for maps of arity 4. op2rs's Python API makes its kernels this way. A values array
    /// declared larger than the values an arg hands it (`double x[3]` for a Dat of dim 2) is
    /// still refused: the kernel could write past them.
    pub fn without_bound_checks(name: &str, source: &str) -> Result<Self> {
        Ok(Kernel::new(name, source)?.altered(|k| k.checks_bounds = false))
    }

    /// This kernel written in C++ rather than C (PyOP2's `Kernel(..., cpp=True)`): its loops'
    /// code is compiled as C++ (`-x c++`, linked with the C++ library), so the source may include
    /// `<cmath>` or use templates and `std::`. The host backends (seq, openmp) run it; the device
    /// backends refuse it (`Op2Error::Unsupported`), as does a loop over complex values. Loops of
    /// C and C++ kernels are not fused with each other. A new kernel (its own id).
    pub fn cpp(self) -> Self {
        self.changed(|k| k.cpp = true)
    }

    /// Whether the source is C++ ([`Kernel::cpp`]).
    pub fn is_cpp(&self) -> bool {
        self.0.cpp
    }

    /// This kernel with its loops' compiled code linked with `args` as well (today's PyOP2's
    /// `Kernel(..., ldargs=[...])`): `-lNAME`, `-L/dir`, `-Wl,...`, or a library's path, given to
    /// the compiler after the generated source. Each `-L` folder is also the library's run-time
    /// search path (`-Wl,-rpath`), so that the libraries found there at link time are found
    /// again when the loop's code is loaded; a relative `-L` (or `-I`) folder is made absolute
    /// here, from the current folder. The arguments are part of the compiled code's cache key,
    /// the libraries' contents are not (a library rebuilt under the same name is not noticed
    /// by code already compiled, as with any shared library). The host backends (seq, openmp)
    /// run such kernels; the device backends refuse them (`Op2Error::Unsupported`): a device's
    /// code links nothing. Loops linked differently are not fused. An empty argument, one
    /// holding a NUL byte, or a bare `-L` (its folder in the next argument) is refused
    /// (`Op2Error::LinkArgs`). A new kernel (its own id).
    pub fn with_link_args<I, S>(self, args: I) -> Result<Self>
    where
        I: IntoIterator<Item = S>,
        S: Into<String>,
    {
        let args = self.checked_args(args)?;
        Ok(self.changed(|k| add_args(&mut k.link_args, &args)))
    }

    /// What the kernel's loops are linked with ([`Kernel::with_link_args`]; empty for most).
    pub fn link_args(&self) -> &[String] {
        &self.0.link_args
    }

    /// This kernel with its loops' code compiled with `args` as well, after the backend's flags
    /// and `OP2_CFLAGS` (`-I/dir` for a library's headers, `-DNAME=value`): for kernels that
    /// include a library's headers (a PETSc `Mat` handed through, today's PyOP2's
    /// `PassthroughArg`), usually with [`Kernel::with_link_args`]. The host backends (seq,
    /// openmp) run such kernels; the device backends refuse them (`Op2Error::Unsupported`).
    /// Loops compiled with different arguments are not fused. Headers' contents are not part
    /// of the compiled code's cache key (the arguments are): after changing a header, clear
    /// the cache (`OP2_CACHE_DIR`). Refused as [`Kernel::with_link_args`] refuses. A new kernel
    /// (its own id).
    pub fn with_compile_args<I, S>(self, args: I) -> Result<Self>
    where
        I: IntoIterator<Item = S>,
        S: Into<String>,
    {
        let args = self.checked_args(args)?;
        Ok(self.changed(|k| add_args(&mut k.compile_args, &args)))
    }

    /// What the kernel's loops are compiled with besides the backend's flags
    /// ([`Kernel::with_compile_args`]; empty for most).
    pub fn compile_args(&self) -> &[String] {
        &self.0.compile_args
    }

    /// This kernel acting on host state outside its args (a C pointer handed through in a
    /// Global, today's PyOP2's `PassthroughArg`: a PETSc `Mat` it calls `MatSetValues` on, a
    /// counter), which the runtime cannot see: its loops run when they are recorded (lazy
    /// runtimes too: nothing else would force them before the program reads that state), call
    /// it once per element, in element order, on one host thread (no SIMD batches, no
    /// threads), are not fused or tiled with other loops, and the device backends refuse them
    /// (`Op2Error::Unsupported`). Across MPI ranks each rank runs its own elements (its core
    /// ones first) and the exec-halo elements it shares with a neighbour, so an element near a
    /// rank boundary may act on two ranks' state; a checkpointed run replaying to its backup
    /// point skips the loops before it, and their effects with them. A new kernel (its own id).
    pub fn with_host_effects(self) -> Self {
        self.changed(|k| k.host_effects = true)
    }

    /// Whether the kernel acts on host state outside its args ([`Kernel::with_host_effects`],
    /// or a fused kernel calling one).
    pub fn has_host_effects(&self) -> bool {
        self.0.host_effects
    }

    /// Whether the kernel asks for more than C (or C++) and the backend's flags: compile or
    /// link arguments, which only the host backends can give.
    pub fn has_build_args(&self) -> bool {
        !self.0.link_args.is_empty() || !self.0.compile_args.is_empty()
    }

    fn checked_args<I, S>(&self, args: I) -> Result<Vec<String>>
    where
        I: IntoIterator<Item = S>,
        S: Into<String>,
    {
        let bad = |reason: String| Op2Error::LinkArgs {
            kernel: self.name().into(),
            reason,
        };
        args.into_iter()
            .map(Into::into)
            .map(|a: String| {
                if a.trim().is_empty() || a.contains('\0') {
                    return Err(bad(format!("{a:?} is empty or holds a NUL byte")));
                }
                if a == "-L" || a == "-I" {
                    return Err(bad(format!(
                        "{a:?} without its folder: write the folder in the same argument ({a}/dir)"
                    )));
                }
                // A folder relative to where the program runs now: made absolute, so that the
                // compiled code's cache key and run-time search path do not depend on where a
                // later program runs from.
                match (a.get(..2), a.get(2..)) {
                    (Some(flag @ ("-L" | "-I")), Some(dir)) if Path::new(dir).is_relative() => {
                        let here = std::env::current_dir()
                            .map_err(|e| bad(format!("{a:?}: the current folder: {e}")))?;
                        Ok(format!("{flag}{}", here.join(dir).display()))
                    }
                    _ => Ok(a),
                }
            })
            .collect()
    }

    /// This kernel built the way `like` is (C++ when it is, compiled and linked with its
    /// arguments too): for a kernel the runtime wrote around `like`.
    pub(crate) fn built_like(self, like: &Kernel) -> Self {
        let has = |mine: &[String], theirs: &[String]| theirs.iter().all(|a| mine.contains(a));
        if (self.is_cpp() || !like.is_cpp())
            && (self.has_host_effects() || !like.has_host_effects())
            && has(self.link_args(), like.link_args())
            && has(self.compile_args(), like.compile_args())
        {
            return self;
        }
        self.changed(|k| {
            k.cpp |= like.is_cpp();
            k.host_effects |= like.has_host_effects();
            add_args(&mut k.link_args, like.link_args());
            add_args(&mut k.compile_args, like.compile_args());
        })
    }

    /// This kernel changed by `change`, with a new id either way (a kernel's id stands for
    /// everything it is built with, and caches may know the old one): in place when nobody else
    /// holds it, else a copy.
    fn changed(self, change: impl FnOnce(&mut KernelInner)) -> Self {
        match Arc::try_unwrap(self.0) {
            Ok(mut inner) => {
                change(&mut inner);
                inner.id = NEXT_KERNEL_ID.fetch_add(1, Ordering::Relaxed);
                Kernel(Arc::new(inner))
            }
            Err(shared) => {
                let k = Kernel::fused(&shared.name, shared.source.clone(), shared.parts.clone());
                k.altered(|k| {
                    k.cpp = shared.cpp;
                    k.link_args = shared.link_args.clone();
                    k.compile_args = shared.compile_args.clone();
                    k.host_effects = shared.host_effects;
                    k.checks_bounds = shared.checks_bounds;
                    k.steps_pointers = shared.steps_pointers;
                    k.params = shared.params.clone();
                    k.identifiers = shared.identifiers.clone();
                    change(k);
                })
            }
        }
    }

    /// This kernel, just made by the runtime, with bound checks off: for a kernel whose
    /// parameters repeat a lenient user kernel's ([`Kernel::without_bound_checks`]).
    pub(crate) fn without_own_bound_checks(self) -> Self {
        self.altered(|k| k.checks_bounds = false)
    }

    /// Whether `par_loop` compares parameters' array bounds with the args (see
    /// [`Kernel::without_bound_checks`]).
    pub fn checks_bounds(&self) -> bool {
        self.0.checks_bounds
    }

    /// A kernel the runtime writes to run several loops' kernels as one (loop fusion): `source`
    /// defines `name`, which calls `parts` in order, each with the listed parameters of `name`.
    /// Its names may use the generated code's prefix (it is generated code), so the user-name
    /// checks do not apply.
    pub(crate) fn fused(name: &str, source: String, parts: Vec<(Kernel, Vec<usize>)>) -> Self {
        let (identifiers, params) = read_source(&source, name);
        // A kernel calling a column walk steps pointers through it; one calling C++ is compiled
        // as C++ (the runtime's own code is both).
        let steps_pointers = parts.iter().any(|(k, _)| k.steps_pointers());
        let cpp = parts.iter().any(|(k, _)| k.is_cpp());
        let host_effects = parts.iter().any(|(k, _)| k.has_host_effects());
        let (mut link_args, mut compile_args) = (Vec::new(), Vec::new());
        for (k, _) in &parts {
            add_args(&mut link_args, k.link_args());
            add_args(&mut compile_args, k.compile_args());
        }
        Kernel(Arc::new(KernelInner {
            id: NEXT_KERNEL_ID.fetch_add(1, Ordering::Relaxed),
            name: name.into(),
            source,
            params,
            identifiers,
            parts,
            checks_bounds: true,
            steps_pointers,
            cpp,
            link_args,
            compile_args,
            host_effects,
        }))
    }

    /// A kernel the runtime writes for its own loops (Dat algebra): named with the generated
    /// code's prefix, so that it can clash with no user name.
    pub(crate) fn internal(name: &str, source: String) -> Self {
        Kernel::fused(name, source, Vec::new())
    }

    /// A kernel the runtime writes to walk the columns of an extruded set: it reaches the cells
    /// above each column's bottom row by stepping the pointers it is handed (see
    /// [`Kernel::steps_pointers`]).
    pub(crate) fn column_walk(name: &str, source: String) -> Self {
        Kernel::internal(name, source).altered(|k| k.steps_pointers = true)
    }

    /// A kernel just made, changed by `change` before anyone else holds it.
    fn altered(self, change: impl FnOnce(&mut KernelInner)) -> Self {
        let mut inner = Arc::try_unwrap(self.0).unwrap_or_else(|_| unreachable!("just made"));
        change(&mut inner);
        Kernel(Arc::new(inner))
    }

    /// Whether the kernel reaches data beyond the rows it is handed by stepping their pointers
    /// (the runtime's column walks over extruded sets, and kernels that call one): every pointer
    /// it gets must then point into the Dat itself, never into a copy of the row, so a code
    /// generator must not stage, gather or batch its args into lane arrays. A walk handed a
    /// copy steps off the copy's end (wrong cells, or a crash).
    pub fn steps_pointers(&self) -> bool {
        self.0.steps_pointers
    }

    /// For a kernel that runs fused loops: the loops' kernels in call order, each with the
    /// positions of this kernel's parameters it is called with (a position past the last
    /// parameter: data of the calling kernel's own, such as a local buffer or an index);
    /// empty otherwise. Code
    /// generators that rewrite a kernel's parameter list (OpenCL's address spaces) rewrite each
    /// part's to match what it is passed.
    pub fn parts(&self) -> &[(Kernel, Vec<usize>)] {
        &self.0.parts
    }

    /// The function name.
    pub fn name(&self) -> &str {
        &self.0.name
    }

    /// The C source.
    pub fn source(&self) -> &str {
        &self.0.source
    }

    /// The parameters, when the definition could be read (macros may hide it).
    pub fn params(&self) -> Option<&[KernelParam]> {
        self.0.params.as_deref()
    }

    /// Whether the source mentions this identifier (used to pick the Consts a kernel needs).
    pub fn mentions(&self, identifier: &str) -> bool {
        self.0.identifiers.contains(identifier)
    }

    /// Unique id of this kernel object.
    pub fn id(&self) -> u64 {
        self.0.id
    }
}

impl PartialEq for Kernel {
    fn eq(&self, other: &Self) -> bool {
        self.0.id == other.0.id
    }
}
impl Eq for Kernel {}
impl Hash for Kernel {
    fn hash<H: Hasher>(&self, state: &mut H) {
        self.0.id.hash(state)
    }
}

impl fmt::Debug for Kernel {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(f, "Kernel({:?})", self.0.name)
    }
}

/// The identifiers `source` uses (comments left out) and the parameters of its definition of
/// `name`, when it has one.
fn read_source(source: &str, name: &str) -> (HashSet<String>, Option<Vec<KernelParam>>) {
    let stripped = strip_comments(source);
    let tokens = tokenize(&stripped);
    let identifiers = tokens
        .iter()
        .filter(|t| is_c_identifier(t))
        .map(|t| t.to_string())
        .collect();
    let mut params = parse_params(&tokens, name);
    if hides_names(&stripped) {
        // A name this source does not spell out may still reach a parameter.
        for p in params.iter_mut().flatten() {
            p.used = true;
        }
    }
    (identifiers, params)
}

/// Whether `stripped` (comments out) can name an identifier without spelling it: token
/// pasting (`##`) builds names, and a header of the user's own (`#include "..."`) may define
/// macros that name the kernel's parameters.
fn hides_names(stripped: &str) -> bool {
    stripped.contains("##")
        || stripped.lines().any(|line| {
            line.trim_start()
                .strip_prefix('#')
                .map(|rest| rest.trim_start())
                .and_then(|rest| rest.strip_prefix("include"))
                .is_some_and(|rest| rest.trim_start().starts_with('"'))
        })
}

/// Whether the `'` at `b[i]` is inside a number (the alphanumeric run before it starts with a
/// digit and a digit follows): a digit separator. `u8'a'` and `L'a'` start with letters.
fn in_number(b: &[u8], i: usize) -> bool {
    let mut start = i;
    while start > 0 && (b[start - 1].is_ascii_alphanumeric() || b[start - 1] == b'\'') {
        start -= 1;
    }
    start < i && b[start].is_ascii_digit() && b.get(i + 1).is_some_and(u8::is_ascii_alphanumeric)
}

/// `src` without its comments, and with the contents of its string and character literals
/// blanked (their quotes kept): neither uses an identifier, and a `//` inside a string is no
/// comment.
fn strip_comments(src: &str) -> String {
    let b = src.as_bytes();
    let mut out = String::with_capacity(src.len());
    let mut i = 0;
    while i < b.len() {
        if b[i] == b'\'' && in_number(b, i) {
            // C++14's digit separator (`1'000`), not a character literal.
            out.push('\'');
            i += 1;
        } else if b[i] == b'"' || b[i] == b'\'' {
            let quote = b[i];
            out.push(quote as char);
            i += 1;
            // To the closing quote (a backslash escapes the next character); a literal never
            // spans lines.
            while i < b.len() && b[i] != quote && b[i] != b'\n' {
                i += if b[i] == b'\\' { 2 } else { 1 };
            }
            if i < b.len() && b[i] == quote {
                out.push(quote as char);
                i += 1;
            }
        } else if b[i] == b'/' && b.get(i + 1) == Some(&b'/') {
            while i < b.len() && b[i] != b'\n' {
                i += 1;
            }
        } else if b[i] == b'/' && b.get(i + 1) == Some(&b'*') {
            i += 2;
            while i < b.len() && !(b[i] == b'*' && b.get(i + 1) == Some(&b'/')) {
                i += 1;
            }
            i += 2;
            out.push(' ');
        } else {
            let ch = src[i..].chars().next().unwrap_or(' ');
            out.push(ch);
            i += ch.len_utf8();
        }
    }
    out
}

fn tokenize(src: &str) -> Vec<&str> {
    let mut tokens = Vec::new();
    let b = src.as_bytes();
    let mut i = 0;
    while i < b.len() {
        let c = b[i];
        if c.is_ascii_whitespace() {
            i += 1;
        } else if c == b'_' || c.is_ascii_alphanumeric() {
            let start = i;
            while i < b.len() && (b[i] == b'_' || b[i].is_ascii_alphanumeric() || b[i] == b'.') {
                i += 1;
            }
            tokens.push(&src[start..i]);
        } else {
            let len = src[i..].chars().next().map_or(1, char::len_utf8);
            tokens.push(&src[i..i + len]);
            i += len;
        }
    }
    tokens
}

/// Finds `name ( ... ) {` and reads its parameters.
fn parse_params(tokens: &[&str], name: &str) -> Option<Vec<KernelParam>> {
    for (pos, _) in tokens.iter().enumerate().filter(|(_, t)| **t == name) {
        if tokens.get(pos + 1) != Some(&"(") {
            continue;
        }
        let mut depth = 0usize;
        let mut end = None;
        for (k, t) in tokens.iter().enumerate().skip(pos + 1) {
            match *t {
                "(" => depth += 1,
                ")" => {
                    depth -= 1;
                    if depth == 0 {
                        end = Some(k);
                        break;
                    }
                }
                _ => {}
            }
        }
        let end = end?;
        if tokens.get(end + 1) != Some(&"{") {
            continue; // a prototype or a call, not the definition
        }
        let inner = &tokens[pos + 2..end];
        if inner.is_empty() || inner == ["void"] {
            return Some(Vec::new());
        }
        let mut params = Vec::new();
        let mut depth = 0usize;
        let mut current: Vec<&str> = Vec::new();
        for t in inner.iter().copied().chain(std::iter::once(",")) {
            match t {
                "(" | "[" => depth += 1,
                ")" | "]" => depth = depth.saturating_sub(1),
                "," if depth == 0 => {
                    params.push(parse_param(&current, tokens));
                    current.clear();
                    continue;
                }
                _ => {}
            }
            current.push(t);
        }
        return Some(params);
    }
    None
}

/// One parameter from its declaration's `tokens`; `source` is the whole source's tokens (to
/// see whether the parameter's name is used anywhere else).
fn parse_param(tokens: &[&str], source: &[&str]) -> KernelParam {
    let text = tokens
        .join(" ")
        .replace(" [", "[")
        .replace("[ ", "[")
        .replace(" ]", "]");
    let pointers = tokens.iter().filter(|t| **t == "*").count();
    // Words outside brackets: the type words and, last, the parameter's name; inside brackets,
    // each array declarator's bound.
    let mut words = Vec::new();
    let mut bounds = Vec::new();
    let mut inside: Vec<&str> = Vec::new();
    let mut depth = 0usize;
    for t in tokens {
        match *t {
            "[" => {
                depth += 1;
                inside.clear();
            }
            "]" => {
                depth = depth.saturating_sub(1);
                if depth == 0 {
                    bounds.push(match inside[..] {
                        [literal] => parse_bound(literal),
                        _ => None,
                    });
                }
            }
            _ if depth > 0 => inside.push(t),
            _ if is_c_identifier(t) => words.push(*t),
            _ => {}
        }
    }
    let arrays = bounds.len();
    let type_words = if words.len() > 1 {
        &words[..words.len() - 1]
    } else {
        &words[..]
    };
    // The name is the last word when there is more than the type's words.
    let name = (words.len() > 1).then(|| words[words.len() - 1]);
    let used = name.is_some_and(|n| source.iter().filter(|t| **t == n).count() > 1);
    KernelParam {
        text,
        dtype: DType::from_c_name(&type_words.join(" ")),
        indirection: pointers + arrays,
        pointers,
        bounds,
        used,
    }
}

/// An array bound written as a decimal or hexadecimal integer literal, with any `u`/`l` suffix.
fn parse_bound(literal: &str) -> Option<usize> {
    let digits = literal.trim_end_matches(['u', 'U', 'l', 'L']);
    match digits
        .strip_prefix("0x")
        .or_else(|| digits.strip_prefix("0X"))
    {
        Some(hex) => usize::from_str_radix(hex, 16).ok(),
        None => digits.parse().ok(),
    }
}

/// Appends `more` to `args`, each argument once, in order.
fn add_args(args: &mut Vec<String>, more: &[String]) {
    for a in more {
        if !args.contains(a) {
            args.push(a.clone());
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn literals_and_comments_hide_no_code() {
        // A `//` inside a string is no comment; quotes and escapes inside literals end where C
        // ends them; a digit separator opens no character literal.
        let src = "void k(double *a, double *b, int *c) { f(\"http://x\", '\"', \"\\\"\"); a[0] = 1'000 * alpha; /* b */ }";
        let stripped = strip_comments(src);
        assert!(stripped.contains("a[0] = 1'000 * alpha;"), "{stripped}");
        assert!(!stripped.contains("http"), "{stripped}");
        let k = Kernel::new("k", src).unwrap();
        let used: Vec<bool> = k.params().unwrap().iter().map(|p| p.used).collect();
        assert_eq!(used, [true, false, false]);
        assert!(k.0.identifiers.contains("alpha"));
        // Character literals with prefixes stay literals.
        assert_eq!(strip_comments("u8'x' L'y' 0x1'F"), "u8'' L'' 0x1'F");
    }

    #[test]
    fn reads_parameters() {
        let k = Kernel::new(
            "k",
            "/* k(int x) */ static inline void k(const double *a, float b[2], double *c[3], unsigned long **d, my_t *e) { a = 0; }",
        )
        .unwrap();
        let p = k.params().unwrap();
        assert_eq!(p.len(), 5);
        assert_eq!((p[0].dtype, p[0].indirection), (Some(DType::F64), 1));
        assert_eq!((p[1].dtype, p[1].indirection), (Some(DType::F32), 1));
        assert_eq!((p[2].dtype, p[2].indirection), (Some(DType::F64), 2));
        assert_eq!((p[3].dtype, p[3].indirection), (Some(DType::U64), 2));
        assert_eq!(p[4].dtype, None);
        assert_eq!((p[1].pointers, &p[1].bounds[..]), (0, &[Some(2)][..]));
        assert_eq!((p[2].pointers, &p[2].bounds[..]), (1, &[Some(3)][..]));
        assert_eq!((p[3].pointers, p[3].bounds.len()), (2, 0));
    }

    #[test]
    fn reads_array_bounds() {
        let k = Kernel::new(
            "k",
            "void k(double *a[0x4u], double b[N], double c[], double d[2][3]) {}",
        )
        .unwrap();
        let p = k.params().unwrap();
        assert_eq!(p[0].bounds, [Some(4)]);
        assert_eq!(p[1].bounds, [None]);
        assert_eq!(p[2].bounds, [None]);
        assert_eq!(
            (p[3].pointers, &p[3].bounds[..]),
            (0, &[Some(2), Some(3)][..])
        );
    }

    #[test]
    fn skips_prototypes_and_reads_void() {
        let k = Kernel::new("k", "void k(double *a);\nvoid k(void) {}").unwrap();
        assert_eq!(k.params().unwrap().len(), 0);
    }

    #[test]
    fn rejects_missing_definition() {
        assert!(matches!(
            Kernel::new("k", "void other(double *a) {}"),
            Err(Op2Error::KernelNotFound { .. })
        ));
        assert!(matches!(
            Kernel::new("1k", "void k() {}"),
            Err(Op2Error::InvalidIdentifier { .. })
        ));
    }
}
