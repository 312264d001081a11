//! Method names that each language's standard types answer (`dict.get`, `Array.push`,
//! `Option::unwrap`, `List.add`). A call of one on a receiver of unknown type is far more
//! often a call on such a value than on the one method of the repository that shares the
//! name, so the call graph does not infer that method as the target unless the receiver's
//! name points at its type (see `graph::Graph::resolve_call`).
//!
//! Also the standard types and namespaces a call names without importing them (`Math.max`,
//! `Thread.sleep`, `Vec::with_capacity`, `std::mem::swap`): such a call leaves the
//! repository, whatever method of that name the repository defines.

use std::collections::HashSet;
use std::sync::OnceLock;

use crate::lang::Language;

const PYTHON: &str = "\
    acquire add append clear close copy count critical debug decode difference discard \
    encode endswith error exception exists extend fetchall fetchone find findall flush \
    format fullmatch get glob group groups index info insert intersection is_dir is_file \
    items iterdir join keys lower lstrip match mkdir partition pop popitem read read_bytes \
    read_text readline readlines relative_to release remove replace resolve reverse rfind \
    rglob rsplit rstrip search seek setdefault sort split splitlines startswith strip sub \
    tell union unlink update upper values warning with_suffix write write_bytes write_text \
    writelines";

const ECMASCRIPT: &str = "\
    add addEventListener appendChild apply assign bind call catch charAt clear concat debug \
    delete emit endsWith entries error every exec filter finally find findIndex flat flatMap \
    forEach get has hasOwnProperty includes indexOf info join json keys log map match off on \
    once padStart pop push querySelector reduce reject removeEventListener replace resolve \
    reverse set shift slice some sort splice split startsWith substring test text then \
    toLowerCase toString toUpperCase trim unshift values warn";

const RUST: &str = "\
    all and_then any as_bytes as_ref as_str borrow borrow_mut bytes chars clear clone cmp \
    collect contains contains_key count dedup ends_with entry enumerate eq expect extend \
    filter filter_map find first flush fmt fold get get_mut hash insert into_iter is_empty \
    is_err is_none is_ok is_some iter iter_mut join keys last len lines lock map max min \
    next ok ok_or or_default or_insert parse partial_cmp pop push push_str read recv remove \
    replace rev send skip sort sort_by sort_unstable split starts_with sum take to_owned \
    to_string to_vec trim unwrap unwrap_or unwrap_or_default unwrap_or_else values write zip";

const GO: &str = "\
    Add Close Decode Del Done Encode Err Error Errorf Exec Fatal Fatalf Get Header Helper \
    Len Lock Log Logf Next Print Printf Println Query RLock RUnlock Read Run Scan Set \
    Sprintf String Unlock Value Wait Write WriteHeader WriteString";

const JVM: &str = "\
    add addAll also append apply asList charAt clear close collect compareTo computeIfAbsent \
    contains containsKey debug endsWith entrySet equals error filter first flush forEach \
    format get getClass getKey getOrDefault getValue hasNext hashCode indexOf info isEmpty \
    isNotEmpty isPresent iterator keySet last length let map next orElse print println put \
    putAll read remove replace size sort split startsWith stream substring toList \
    toLowerCase toString toUpperCase trace trim valueOf values warn write";

const CPP: &str = "\
    append at back begin c_str cbegin cend clear compare count data detach emplace \
    emplace_back empty end erase find front get has_value insert join length load lock \
    notify_all notify_one pop pop_back push push_back rbegin release rend reserve reset \
    resize size store str substr swap top unlock value value_or wait what";

const CSHARP: &str = "\
    Add All Any Append Clear Close ConfigureAwait Contains ContainsKey Count Dispose Equals \
    First FirstOrDefault Flush Format GetAwaiter GetHashCode GetResult GetType IndexOf \
    Insert Invoke Join LogDebug LogError LogInformation LogWarning Max Min OrderBy Read \
    ReadLine Remove Replace Select Split StartsWith Substring Sum ToArray ToList ToString \
    Trim TryGetValue Wait Where Write WriteLine";

const RUBY: &str = "\
    call close compact count delete dig dup each each_with_index each_with_object empty? \
    fetch find first flatten freeze gsub include? inject is_a? join key? keys last length \
    map max merge min nil? pop push puts read reduce reject respond_to? select send shift \
    size sort sort_by split strip sub sum to_a to_h to_i to_s to_sym uniq unshift values \
    write";

const SWIFT: &str = "\
    append compactMap contains count description dropFirst dropLast enumerated filter first \
    flatMap forEach hasPrefix hasSuffix insert isEmpty joined last lowercased map max min \
    popLast reduce remove removeAll reversed sorted split uppercased";

/// Types and namespaces in scope without an import, per language (imported ones are traced
/// through their imports), then the roots of the standard library's paths.
const PYTHON_TYPES: &str = "\
    BaseException Exception bool bytearray bytes complex dict float frozenset int list object \
    set str tuple";

const ECMASCRIPT_TYPES: &str = "\
    Array ArrayBuffer Atomics BigInt Boolean Buffer DataView Date Error Function Intl JSON \
    Map Math Number Object Promise Proxy Reflect RegExp Set String Symbol URL URLSearchParams \
    WeakMap WeakSet console document globalThis";

const RUST_TYPES: &str = "Box Option Result String Vec";

const JVM_TYPES: &str = "\
    Boolean Byte Character Class Double Enum Float Integer Long Math Object Runtime Short \
    StrictMath String StringBuilder System Thread ThreadLocal";

const CSHARP_TYPES: &str = "\
    Array Console Convert DateTime Enum Environment GC Guid Math Object String Task TimeSpan \
    Type";

const RUBY_TYPES: &str = "\
    Array Comparable Dir Encoding Enumerable File FileTest Float GC Hash IO Integer Kernel \
    Marshal Math Method Module Object ObjectSpace Process Random Range Regexp Signal String \
    Struct Symbol Thread Time";

/// Standard types (first) and path roots of the languages that have them.
const STANDARD: [(&[Language], &str, &[&str]); 7] = [
    (&[Language::Python], PYTHON_TYPES, &[]),
    (
        &[Language::JavaScript, Language::TypeScript, Language::Tsx],
        ECMASCRIPT_TYPES,
        &[],
    ),
    (&[Language::Rust], RUST_TYPES, &["alloc", "core", "std"]),
    (
        &[Language::Java, Language::Kotlin, Language::Scala],
        JVM_TYPES,
        &["java", "javax", "kotlin", "scala"],
    ),
    (&[Language::CSharp], CSHARP_TYPES, &["System"]),
    (&[Language::Ruby], RUBY_TYPES, &[]),
    (&[Language::Cpp], "", &["std"]),
];

/// The tables above and the languages each serves (each a space-separated list in byte
/// order).
const TABLES: [(&[Language], &str); 9] = [
    (&[Language::Python], PYTHON),
    (
        &[Language::JavaScript, Language::TypeScript, Language::Tsx],
        ECMASCRIPT,
    ),
    (&[Language::Rust], RUST),
    (&[Language::Go], GO),
    (&[Language::Java, Language::Kotlin, Language::Scala], JVM),
    (&[Language::Cpp], CPP),
    (&[Language::CSharp], CSHARP),
    (&[Language::Ruby], RUBY),
    (&[Language::Swift], SWIFT),
];

/// Whether `name` is a method the standard types of `lang` answer.
#[must_use]
pub fn is_common_method(lang: Language, name: &str) -> bool {
    static SETS: OnceLock<Vec<HashSet<&'static str>>> = OnceLock::new();
    let Some(i) = TABLES.iter().position(|(langs, _)| langs.contains(&lang)) else {
        return false;
    };
    let sets = SETS.get_or_init(|| {
        TABLES
            .iter()
            .map(|(_, names)| names.split_whitespace().collect())
            .collect()
    });
    sets[i].contains(name)
}

/// Whether the qualifier `segments` (`["Math"]`, `["std", "mem"]`) names a standard type of
/// `lang` or a path of its standard library.
#[must_use]
pub fn is_standard_qualifier(lang: Language, segments: &[&str]) -> bool {
    static SETS: OnceLock<Vec<HashSet<&'static str>>> = OnceLock::new();
    let Some(i) = STANDARD
        .iter()
        .position(|(langs, ..)| langs.contains(&lang))
    else {
        return false;
    };
    let sets = SETS.get_or_init(|| {
        STANDARD
            .iter()
            .map(|(_, names, _)| names.split_whitespace().collect())
            .collect()
    });
    match segments {
        [one] => sets[i].contains(one) || STANDARD[i].2.contains(one),
        [root, ..] => STANDARD[i].2.contains(root),
        [] => false,
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn each_table_is_in_byte_order_without_repeats() {
        // So a name is found by eye and never listed twice.
        let standard = STANDARD.iter().map(|(_, names, _)| *names);
        for table in TABLES.iter().map(|(_, names)| *names).chain(standard) {
            let names: Vec<&str> = table.split_whitespace().collect();
            assert!(names.windows(2).all(|w| w[0] < w[1]), "{:?}", names.first());
        }
    }

    #[test]
    fn names_are_common_in_their_language_only() {
        assert!(is_common_method(Language::Python, "get"));
        assert!(is_common_method(Language::TypeScript, "push"));
        assert!(is_common_method(Language::Kotlin, "let"));
        assert!(!is_common_method(Language::Python, "push"));
        assert!(!is_common_method(Language::Zig, "get"));
        assert!(!is_common_method(Language::Python, "refresh_token"));
    }

    #[test]
    fn standard_qualifiers_are_types_in_scope_or_paths_of_the_standard_library() {
        assert!(is_standard_qualifier(Language::TypeScript, &["Math"]));
        assert!(is_standard_qualifier(Language::Java, &["Thread"]));
        assert!(is_standard_qualifier(Language::Rust, &["Vec"]));
        assert!(is_standard_qualifier(Language::Rust, &["std", "mem"]));
        assert!(is_standard_qualifier(Language::Cpp, &["std"]));
        // An imported type is traced through its import; a path must start at the root.
        assert!(!is_standard_qualifier(Language::Rust, &["HashMap"]));
        assert!(!is_standard_qualifier(Language::Rust, &["crate", "std"]));
        assert!(!is_standard_qualifier(Language::Python, &["Math"]));
        assert!(!is_standard_qualifier(Language::Go, &["strings"]));
    }
}
