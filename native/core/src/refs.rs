//! References between definitions: call sites, imports and inheritance, found by each
//! language's `queries/<language>/references.scm` in the same parse as the chunks.
//!
//! Capture names (one match per reference):
//! - `@call.name`: the called name; `@call.receiver` (optional): what it is called on
//!   (`obj` in `obj.send()`, `Client` in `Client::new()`, `pkg` in `pkg.Func()`).
//! - `@import.module`: the module as written (quotes stripped); `@import.name` (optional):
//!   one imported name, `*` for a wildcard, absent for the whole module; `@import.alias`
//!   (optional): the local name it is bound to.
//! - `@inherit.class`: the class being defined; `@inherit.base`: one base class, trait or
//!   interface it extends or implements.
//! - `@bind.name`: a parameter or variable; `@bind.type`: the type it is declared with or
//!   constructed from (`store` and `Store` in `def f(store: Store)` or `store = Store()`), so
//!   a call on it is a call on that type. `@bind.field` instead of `@bind.name`: a field of
//!   the enclosing type (`store` in `self.store = Store()`, `private Store store;`).
//!
//! A capture that holds a qualified name (`a.b.c`, `a::b::c`, `a\b\c`) is split: the last
//! segment is the name, the rest the qualifier.

use tree_sitter::QueryCapture;

use crate::lang::Language;

/// How a bound field is named, whatever the language's receiver is (`this.store`, `@store`).
pub const FIELD: &str = "self.";

/// Upper bound on references kept per file, against generated or pathological sources.
pub const MAX_REFS: usize = 50_000;
/// Receivers and modules longer than this are cut: they only need to be recognisable.
const MAX_TEXT: usize = 120;

#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash, PartialOrd, Ord)]
pub enum RefKind {
    Call,
    Import,
    Inherit,
    Bind,
}

impl RefKind {
    fn code(self) -> char {
        match self {
            RefKind::Call => 'c',
            RefKind::Import => 'i',
            RefKind::Inherit => 'h',
            RefKind::Bind => 'b',
        }
    }

    fn from_code(code: &str) -> Option<RefKind> {
        match code {
            "c" => Some(RefKind::Call),
            "i" => Some(RefKind::Import),
            "h" => Some(RefKind::Inherit),
            "b" => Some(RefKind::Bind),
            _ => None,
        }
    }

    #[must_use]
    pub fn name(self) -> &'static str {
        match self {
            RefKind::Call => "call",
            RefKind::Import => "import",
            RefKind::Inherit => "inherit",
            RefKind::Bind => "bind",
        }
    }
}

/// One reference found in a file. Lines are 1-based.
///
/// - `Call`: `name` is the called name, `qualifier` the receiver ("" when called bare).
/// - `Import`: `qualifier` is the module, `name` the imported name ("" for the module itself,
///   `*` for all its names), `alias` the local name it is bound to ("" when there is none,
///   as for C includes and wildcard imports).
/// - `Inherit`: `alias` is the class defined, `name` the base's own name and `qualifier`
///   the base's qualifier ("" when unqualified).
/// - `Bind`: `alias` is a parameter or variable, or `self.<field>` for a field of the
///   enclosing type, whatever the language calls its receiver; `name` is its type's own name
///   and `qualifier` the type's qualifier (`httpx` for `headers: httpx.Headers`); `line` is
///   the variable's.
#[derive(Clone, Debug, PartialEq, Eq, PartialOrd, Ord)]
pub struct Ref {
    pub kind: RefKind,
    pub line: u32,
    pub name: String,
    pub qualifier: String,
    pub alias: String,
}

impl Ref {
    /// The name as written with its qualifier (`self.send`, `httpx.Headers`), or alone.
    #[must_use]
    pub fn written(&self) -> String {
        if self.qualifier.is_empty() {
            self.name.clone()
        } else {
            format!("{}.{}", self.qualifier, self.name)
        }
    }
}

/// The reference one match of a references pattern describes, if any. `names` are the
/// query's capture names.
pub(crate) fn from_match(
    captures: &[QueryCapture<'_>],
    names: &[&str],
    source: &str,
    lang: Language,
) -> Option<Ref> {
    let bytes = source.as_bytes();
    let mut found = Captured::default();
    for cap in captures {
        let Ok(text) = cap.node.utf8_text(bytes) else {
            continue;
        };
        let line = u32::try_from(cap.node.start_position().row + 1).unwrap_or(u32::MAX);
        match names.get(cap.index as usize).copied().unwrap_or_default() {
            "call.name" => found.call_name = Some((text, line)),
            "call.receiver" => found.receiver = Some(text),
            "import.module" => {
                // A module path given as several nodes (Scala's `path` identifiers,
                // Kotlin's path but its last name): the source from first to last.
                let (start, end) = match found.module_span {
                    Some((s, e)) => (s.min(cap.node.start_byte()), e.max(cap.node.end_byte())),
                    None => (cap.node.start_byte(), cap.node.end_byte()),
                };
                found.module_span = Some((start, end));
                let line = found.module.map_or(line, |(_, l)| l.min(line));
                found.module = source.get(start..end).map(|t| (t, line));
            }
            "import.name" => found.import_name = Some(text),
            "import.alias" => found.alias = Some(text),
            "inherit.class" => found.class = Some(text),
            "inherit.base" => found.base = Some((text, line)),
            "bind.name" => found.bound = Some((text, line)),
            "bind.field" => found.field = Some((text, line)),
            "bind.type" => found.bound_type = Some(text),
            _ => {}
        }
    }
    found.into_ref(lang)
}

#[derive(Default)]
struct Captured<'a> {
    call_name: Option<(&'a str, u32)>,
    receiver: Option<&'a str>,
    module: Option<(&'a str, u32)>,
    /// Byte range of the module's captures (several nodes may make one path).
    module_span: Option<(usize, usize)>,
    import_name: Option<&'a str>,
    alias: Option<&'a str>,
    class: Option<&'a str>,
    base: Option<(&'a str, u32)>,
    bound: Option<(&'a str, u32)>,
    field: Option<(&'a str, u32)>,
    bound_type: Option<&'a str>,
}

impl Captured<'_> {
    fn into_ref(self, lang: Language) -> Option<Ref> {
        if let Some((text, line)) = self.call_name {
            let (qualifier, name) = split_qualified(&compact(text));
            if name.is_empty() {
                return None;
            }
            let receiver = self.receiver.map(compact).unwrap_or_default();
            let qualifier = match (receiver.is_empty(), qualifier.is_empty()) {
                (true, _) => qualifier,
                (false, true) => receiver,
                (false, false) => format!("{receiver}.{qualifier}"),
            };
            return Some(Ref {
                kind: RefKind::Call,
                line,
                name,
                qualifier: clip(qualifier),
                alias: String::new(),
            });
        }
        if let Some((text, line)) = self.module {
            let mut module = clip(unquote(&compact(text)).to_owned());
            if module.is_empty() {
                return None;
            }
            // Rust use lists: `use crate::{store::Store}` names `Store` of `crate::store`.
            if lang == Language::Rust
                && let Some(name) = self.import_name
            {
                let (qualifier, _) = split_qualified(&compact(name));
                if !qualifier.is_empty() {
                    module = clip(format!("{module}::{qualifier}"));
                }
            }
            let name = self
                .import_name
                .map(|n| {
                    let n = compact(n);
                    if n == "*"
                        || (lang == Language::Go && n == ".")
                        || (lang == Language::Scala && n == "_")
                    {
                        // Go's dot import (`import . "pkg"`) and Scala 2's `import a.b._`
                        // are wildcards.
                        "*".to_owned()
                    } else {
                        split_qualified(&n).1
                    }
                })
                .unwrap_or_default();
            let alias = match self.alias.map(compact).filter(|a| !a.is_empty()) {
                Some(alias) => alias,
                None if name == "*" => String::new(),
                None if !name.is_empty() => name.clone(),
                None => default_module_alias(&module, lang),
            };
            return Some(Ref {
                kind: RefKind::Import,
                line,
                name,
                qualifier: module,
                alias,
            });
        }
        if let (Some(class), Some((base, line))) = (self.class, self.base) {
            return type_ref(
                RefKind::Inherit,
                line,
                &strip_generics(&compact(base)),
                class,
            );
        }
        if let (Some((variable, line)), Some(ty)) = (self.bound, self.bound_type) {
            return type_ref(RefKind::Bind, line, &one_type(&compact(ty))?, variable);
        }
        if let (Some((field, line)), Some(ty)) = (self.field, self.bound_type) {
            // PHP's `private Store $store` is reached as `$this->store`, Ruby's `@store` as
            // itself.
            let field = format!("{FIELD}{}", field.trim_start_matches(['$', '@']));
            return type_ref(RefKind::Bind, line, &one_type(&compact(ty))?, &field);
        }
        None
    }
}

/// A reference naming a type (`ty`, qualified as written) for `alias` (a class, a
/// parameter).
fn type_ref(kind: RefKind, line: u32, ty: &str, alias: &str) -> Option<Ref> {
    let (qualifier, name) = split_qualified(ty);
    let alias = compact(alias);
    if name.is_empty() || alias.is_empty() {
        return None;
    }
    Some(Ref {
        kind,
        line,
        name,
        qualifier: clip(qualifier),
        alias,
    })
}

/// The name a whole-module import binds when it has no alias: the module's last segment
/// (`os.path` -> `path`, `github.com/x/mux` -> `mux`, `App\\Models\\User` -> `User`). File
/// loads (C includes, Ruby `require`, Bash `source`, PHP `require`) and namespace-wide
/// imports (C# `using`, Swift `import`) bind no name: they put the module's names in scope.
fn default_module_alias(module: &str, lang: Language) -> String {
    let file_load = module.contains('/')
        || module
            .rsplit_once('.')
            .is_some_and(|(_, ext)| matches!(ext, "h" | "hh" | "hpp" | "rb" | "php" | "sh"));
    let binds_nothing = match lang {
        Language::C | Language::Cpp | Language::Bash | Language::CSharp | Language::Swift => true,
        Language::Ruby => !module.contains("::"),
        Language::Php => file_load,
        _ => false,
    };
    if binds_nothing {
        return String::new();
    }
    if lang == Language::Python {
        // `import a.b` binds `a`; `a.b.f()` then names the module in full.
        return module.split('.').next().unwrap_or_default().to_owned();
    }
    let module = [".zig", ".lua", ".js", ".ts"]
        .iter()
        .find_map(|ext| module.strip_suffix(ext))
        .unwrap_or(module);
    let last = module
        .rsplit(['.', '/', ':', '\\'])
        .find(|s| !s.is_empty())
        .unwrap_or_default();
    if last
        .chars()
        .all(|c| c.is_alphanumeric() || c == '_' || c == '$')
    {
        last.to_owned()
    } else {
        String::new()
    }
}

/// Whitespace removed: names and receivers never need it, and the storage format is
/// tab and newline separated.
fn compact(text: &str) -> String {
    text.chars().filter(|c| !c.is_whitespace()).collect()
}

fn clip(mut text: String) -> String {
    if text.len() > MAX_TEXT {
        let mut end = MAX_TEXT;
        while !text.is_char_boundary(end) {
            end -= 1;
        }
        text.truncate(end);
    }
    text
}

fn unquote(text: &str) -> &str {
    text.trim_matches(|c| matches!(c, '"' | '\'' | '`' | '<' | '>'))
}

/// The one type a declared type names (whitespace removed), as a qualified name: `Store`,
/// `httpx.Headers`, `crate::a::Store`, a forward reference `"Store"`, `Optional[Store]`,
/// `Store | None` or `| null`, a reference or pointer (`&Store`, `&mut Store`, `*Store`), a
/// type with lifetimes alone (`Lines<'_>`); `None` for a union, a generic type or anything
/// else.
fn one_type(declared: &str) -> Option<String> {
    let mut ty = unquote(declared);
    if let Some(inner) = ty
        .strip_prefix("Optional[")
        .and_then(|t| t.strip_suffix(']'))
    {
        ty = inner;
    }
    let mut parts = ty
        .split('|')
        .filter(|part| !matches!(*part, "None" | "null" | "undefined"));
    let ty = unquote(parts.next()?);
    let ty = ty
        .strip_prefix("&mut")
        .unwrap_or(ty)
        .trim_start_matches(['&', '*']);
    // Lifetimes alone (`Lines<'_>`, `Parser<'a,'b>`; `unquote` took the last `>`) leave
    // one type.
    let ty = match ty.split_once('<') {
        Some((base, args))
            if args
                .trim_end_matches('>')
                .split(',')
                .all(|a| a.starts_with('\'') && !a.contains(['<', '>'])) =>
        {
            base
        }
        _ => ty,
    };
    let named = |t: &str| {
        t.replace("::", ".").split('.').all(|segment| {
            segment
                .chars()
                .next()
                .is_some_and(|c| c.is_alphabetic() || c == '_')
                && segment.chars().all(|c| c.is_alphanumeric() || c == '_')
        })
    };
    (parts.next().is_none() && named(ty)).then(|| ty.to_owned())
}

/// `Base<T>` -> `Base`, `Base[T]` -> `Base`, `Base(args)` -> `Base`.
fn strip_generics(text: &str) -> String {
    let end = text.find(['<', '[', '(']).unwrap_or(text.len());
    text[..end].to_owned()
}

/// Splits `a.b.c`, `a::b::c`, `a\b\c` and `a->b` into (`a.b`, `c`) with the qualifier's
/// separators as written.
fn split_qualified(text: &str) -> (String, String) {
    let text = text.trim_end_matches(['.', ':', '\\']);
    let cut = [".", "::", "\\", "->", "?."]
        .iter()
        .filter_map(|sep| text.rfind(sep).map(|i| (i, sep.len())))
        .max_by_key(|&(i, _)| i);
    match cut {
        Some((i, len)) => (text[..i].to_owned(), text[i + len..].to_owned()),
        None => (String::new(), text.to_owned()),
    }
}

/// The most a file's encoded references may claim to hold ([`MAX_REFS`] long lines).
const MAX_ENCODED_BYTES: usize = 64 << 20;

/// Serialises references for the store: one tab-separated line per reference.
#[must_use]
pub fn encode(refs: &[Ref]) -> Vec<u8> {
    let mut text = String::with_capacity(refs.len() * 24);
    for r in refs {
        text.push(r.kind.code());
        text.push('\t');
        text.push_str(&r.line.to_string());
        for field in [&r.name, &r.qualifier, &r.alias] {
            text.push('\t');
            text.push_str(field);
        }
        text.push('\n');
    }
    crate::textblob::zstd_compress(text.as_bytes()).unwrap_or_default()
}

/// Reads what [`encode`] wrote; damaged input yields the references before the damage.
#[must_use]
pub fn decode(blob: &[u8]) -> Vec<Ref> {
    if blob.is_empty() {
        return Vec::new();
    }
    let Ok(raw) = crate::textblob::zstd_decompress(blob, MAX_ENCODED_BYTES) else {
        return Vec::new();
    };
    let text = String::from_utf8_lossy(&raw);
    let mut out = Vec::new();
    for line in text.lines() {
        let mut fields = line.split('\t');
        let (Some(kind), Some(n), Some(name), Some(qualifier), Some(alias)) = (
            fields.next().and_then(RefKind::from_code),
            fields.next().and_then(|n| n.parse::<u32>().ok()),
            fields.next(),
            fields.next(),
            fields.next(),
        ) else {
            break;
        };
        out.push(Ref {
            kind,
            line: n,
            name: name.to_owned(),
            qualifier: qualifier.to_owned(),
            alias: alias.to_owned(),
        });
    }
    out
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_declared_type_names_one_type_or_none() {
        for (declared, want) in [
            ("Store", Some("Store")),
            ("httpx.Headers", Some("httpx.Headers")),
            ("\"Console\"", Some("Console")),
            ("Optional[Store]", Some("Store")),
            ("Store|None", Some("Store")),
            ("None|m.Store", Some("m.Store")),
            ("\"Store|None\"", Some("Store")),
            ("List[int]", None),
            ("Store|Cache", None),
            ("Callable[[int],str]", None),
            ("None", None),
            ("Store|null", Some("Store")),
            ("&Store", Some("Store")),
            ("&mutStore", Some("Store")),
            ("*pkg.Store", Some("pkg.Store")),
            ("crate::a::Store", Some("crate::a::Store")),
            ("Box<Store>", None),
            ("&Lines<'_>", Some("Lines")),
            ("&mutParser<'a,'b>", Some("Parser")),
            ("Store<'a,T>", None),
        ] {
            assert_eq!(one_type(declared).as_deref(), want, "{declared}");
        }
    }

    #[test]
    fn qualified_names_split_on_the_last_separator() {
        assert_eq!(split_qualified("a.b.c"), ("a.b".into(), "c".into()));
        assert_eq!(
            split_qualified("std::mem::take"),
            ("std::mem".into(), "take".into())
        );
        assert_eq!(
            split_qualified("App\\Models\\User"),
            ("App\\Models".into(), "User".into())
        );
        assert_eq!(split_qualified("plain"), (String::new(), "plain".into()));
        assert_eq!(split_qualified("ptr->next"), ("ptr".into(), "next".into()));
    }

    #[test]
    fn encoding_round_trips_and_survives_damage() {
        let refs = vec![
            Ref {
                kind: RefKind::Call,
                line: 3,
                name: "send".into(),
                qualifier: "self.client".into(),
                alias: String::new(),
            },
            Ref {
                kind: RefKind::Import,
                line: 1,
                name: "*".into(),
                qualifier: "a.b".into(),
                alias: String::new(),
            },
        ];
        assert_eq!(decode(&encode(&refs)), refs);
        assert!(decode(b"not zstd").is_empty());
        assert!(decode(&[]).is_empty());
    }

    #[test]
    fn module_aliases_follow_the_language() {
        assert_eq!(default_module_alias("os.path", Language::Python), "os");
        assert_eq!(
            default_module_alias("github.com/gorilla/mux", Language::Go),
            "mux"
        );
        assert_eq!(default_module_alias("./util.zig", Language::Zig), "util");
        assert_eq!(default_module_alias("stdio.h", Language::C), "");
        assert_eq!(
            default_module_alias("@scope/pkg-name", Language::JavaScript),
            ""
        );
        assert_eq!(
            default_module_alias("App\\Models\\User", Language::Php),
            "User"
        );
        assert_eq!(
            default_module_alias("vendor/autoload.php", Language::Php),
            ""
        );
    }
}
