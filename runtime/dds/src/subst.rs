//! `${var}` substitution with a map back from the substituted text to the original one.

use std::collections::HashMap;
use std::ops::Range;

/// Maps byte offsets of the substituted text back into the original text.
#[derive(Clone, Debug, Default)]
pub struct SourceMap {
    /// The replaced pieces, in order: `(out, orig)` ranges. Between them the text is copied.
    replaced: Vec<(Range<usize>, Range<usize>)>,
}

impl SourceMap {
    /// The original offset of `pos`, used for the start of a span: inside a substituted value
    /// it is the start of the `${name}`.
    fn map_start(&self, pos: usize) -> usize {
        // The last replacement starting at or before pos.
        let i = self.replaced.partition_point(|(out, _)| out.start <= pos);
        if i == 0 {
            return pos;
        }
        let (out, orig) = &self.replaced[i - 1];
        if pos < out.end {
            orig.start
        } else {
            orig.end + (pos - out.end)
        }
    }

    /// The original offset of `pos`, used for the end of a span: inside (or at the end of) a
    /// substituted value it is the end of the `${name}`.
    fn map_end(&self, pos: usize) -> usize {
        let i = self.replaced.partition_point(|(out, _)| out.start < pos);
        if i == 0 {
            return pos;
        }
        let (out, orig) = &self.replaced[i - 1];
        if pos <= out.end {
            orig.end
        } else {
            orig.end + (pos - out.end)
        }
    }

    /// The original range of a range of the substituted text.
    pub fn map(&self, range: Range<usize>) -> Range<usize> {
        if self.replaced.is_empty() {
            return range;
        }
        let start = self.map_start(range.start);
        let end = self.map_end(range.end).max(start);
        start..end
    }
}

/// The largest substituted text we build (a defence against variables that double each other).
pub const MAX_TEXT: usize = 64 << 20;

/// The largest resolved value of one variable.
pub const MAX_VALUE: usize = 1 << 20;

/// The result of [`substitute`].
#[derive(Debug)]
pub struct Substituted {
    pub text: String,
    pub map: SourceMap,
    /// How often each variable name was used.
    pub uses: HashMap<String, usize>,
    /// True if the text would have grown beyond [`MAX_TEXT`] (then `text` is the original).
    pub too_large: bool,
}

/// Escapes a value for insertion into XML text or an attribute value.
fn escape_into(out: &mut String, value: &str) {
    for c in value.chars() {
        match c {
            '&' => out.push_str("&amp;"),
            '<' => out.push_str("&lt;"),
            '>' => out.push_str("&gt;"),
            '"' => out.push_str("&quot;"),
            '\'' => out.push_str("&apos;"),
            c => out.push(c),
        }
    }
}

/// The name of a `${name}` starting at `text[at..]` (which starts with `${`), and its length.
fn reference_at(text: &str, at: usize) -> Option<(&str, usize)> {
    let rest = &text[at + 2..];
    let close = rest.find('}')?;
    let name = &rest[..close];
    if name.is_empty() || name.len() > 256 || name.contains(['{', '$', '<', '\n']) {
        return None;
    }
    Some((name, close + 3))
}

/// Replaces every `${name}` whose name is in `vars` by the value (XML-escaped, so that the value
/// means the same in an attribute or in text). Unknown names stay as they are (the shell may
/// expand them at run time).
pub fn substitute(text: &str, vars: &HashMap<String, String>) -> Substituted {
    let mut out = String::with_capacity(text.len());
    let mut map = SourceMap::default();
    let mut uses: HashMap<String, usize> = HashMap::new();
    let mut copied_to = 0; // text[..copied_to] is handled
    let mut search = 0;
    while let Some(found) = text[search..].find("${") {
        let at = search + found;
        match reference_at(text, at).and_then(|(name, len)| Some((name, len, vars.get(name)?))) {
            Some((name, len, value)) => {
                out.push_str(&text[copied_to..at]);
                let out_start = out.len();
                escape_into(&mut out, value);
                if out.len() > MAX_TEXT {
                    return Substituted {
                        text: text.to_string(),
                        map: SourceMap::default(),
                        uses,
                        too_large: true,
                    };
                }
                map.replaced.push((out_start..out.len(), at..at + len));
                *uses.entry(name.to_string()).or_default() += 1;
                copied_to = at + len;
                search = at + len;
            }
            None => search = at + 1,
        }
    }
    out.push_str(&text[copied_to..]);
    Substituted {
        text: out,
        map,
        uses,
        too_large: false,
    }
}

/// Resolves variables whose values use other variables (`${a}` in the value of `b`).
/// Returns the resolved values and the names that are part of a cycle (or grow too large).
pub fn resolve(vars: &[(String, String)]) -> (HashMap<String, String>, Vec<String>) {
    let raw: HashMap<&str, &str> = vars.iter().map(|(n, v)| (n.as_str(), v.as_str())).collect();
    let mut done: HashMap<String, String> = HashMap::new();
    let mut bad = Vec::new();
    for (name, _) in vars {
        let mut stack = Vec::new();
        if resolve_one(name, &raw, &mut done, &mut stack).is_none() && !bad.contains(name) {
            bad.push(name.clone());
        }
    }
    (done, bad)
}

fn resolve_one<'a>(
    name: &'a str,
    raw: &HashMap<&'a str, &'a str>,
    done: &mut HashMap<String, String>,
    stack: &mut Vec<&'a str>,
) -> Option<String> {
    if let Some(v) = done.get(name) {
        return Some(v.clone());
    }
    if stack.contains(&name) || stack.len() > 64 {
        return None;
    }
    let value = raw.get(name)?;
    stack.push(name);
    let mut out = String::new();
    let mut rest: &'a str = value;
    while let Some(at) = rest.find("${") {
        out.push_str(&rest[..at]);
        let tail: &'a str = &rest[at..];
        let inner = tail[2..].find('}').map(|close| &tail[2..2 + close]);
        match inner {
            Some(inner) if raw.contains_key(inner) => {
                let v = resolve_one(inner, raw, done, stack)?;
                out.push_str(&v);
                rest = &tail[inner.len() + 3..];
            }
            _ => {
                out.push_str("${");
                rest = &tail[2..];
            }
        }
        if out.len() > MAX_VALUE {
            stack.pop();
            return None;
        }
    }
    out.push_str(rest);
    stack.pop();
    if out.len() > MAX_VALUE {
        return None;
    }
    done.insert(name.to_string(), out.clone());
    Some(out)
}

#[cfg(test)]
mod tests {
    use super::*;

    fn vars(pairs: &[(&str, &str)]) -> HashMap<String, String> {
        pairs
            .iter()
            .map(|(a, b)| (a.to_string(), b.to_string()))
            .collect()
    }

    #[test]
    fn substitutes_known_names_only() {
        let s = substitute("a ${x} b ${y} ${x}", &vars(&[("x", "<1>")]));
        assert_eq!(s.text, "a &lt;1&gt; b ${y} &lt;1&gt;");
        assert_eq!(s.uses.get("x"), Some(&2));
        assert!(!s.too_large);
    }

    #[test]
    fn spans_map_back() {
        let orig = "ab ${long_name} cd";
        let s = substitute(orig, &vars(&[("long_name", "v")]));
        assert_eq!(s.text, "ab v cd");
        // "cd" in the output
        let cd = s.text.find("cd").unwrap();
        assert_eq!(&orig[s.map.map(cd..cd + 2)], "cd");
        // the value maps to the whole reference
        assert_eq!(&orig[s.map.map(3..4)], "${long_name}");
        // a span covering the value and more
        assert_eq!(&orig[s.map.map(0..7)], orig);
        // before the value
        assert_eq!(&orig[s.map.map(0..2)], "ab");
    }

    #[test]
    fn resolves_chains_and_finds_cycles() {
        let (done, bad) = resolve(&[
            ("a".into(), "x${b}y".into()),
            ("b".into(), "${c}${c}".into()),
            ("c".into(), "1".into()),
            ("d".into(), "${e}".into()),
            ("e".into(), "${d}".into()),
            ("f".into(), "${HOME}".into()),
        ]);
        assert_eq!(done["a"], "x11y");
        assert_eq!(done["f"], "${HOME}");
        assert_eq!(bad, vec!["d".to_string(), "e".to_string()]);
    }

    #[test]
    fn doubling_variables_stop() {
        let mut v = vec![("v0".to_string(), "0123456789abcdef".repeat(64))];
        for i in 1..40 {
            v.push((format!("v{i}"), format!("${{v{}}}${{v{}}}", i - 1, i - 1)));
        }
        let (_, bad) = resolve(&v);
        assert!(bad.contains(&"v39".to_string()));
    }
}
