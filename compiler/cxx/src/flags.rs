//! Splitting flags as GPI-Space's generated makefiles would: `$$` is a `$` (make), then the
//! text is split into words like a shell does (quotes and backslashes; no expansion).

/// The words of a flag as written in a net: `-Wl,-rpath='$$ORIGIN'` is `-Wl,-rpath=$ORIGIN`,
/// `-DX="a b" -O2` is the two words `-DX=a b` and `-O2`. An unterminated quote ends at the end
/// of the text.
pub fn shell_words(flag: &str) -> Vec<String> {
    let text = flag.replace("$$", "$");
    let mut words = Vec::new();
    let mut word = String::new();
    let mut in_word = false;
    let mut chars = text.chars();
    while let Some(c) = chars.next() {
        match c {
            '\'' => {
                in_word = true;
                for q in chars.by_ref() {
                    if q == '\'' {
                        break;
                    }
                    word.push(q);
                }
            }
            '"' => {
                in_word = true;
                while let Some(q) = chars.next() {
                    match q {
                        '"' => break,
                        '\\' => match chars.next() {
                            Some(e @ ('"' | '\\' | '$' | '`')) => word.push(e),
                            Some(e) => {
                                word.push('\\');
                                word.push(e);
                            }
                            None => word.push('\\'),
                        },
                        q => word.push(q),
                    }
                }
            }
            '\\' => {
                in_word = true;
                if let Some(e) = chars.next() {
                    word.push(e);
                }
            }
            c if c.is_whitespace() => {
                if in_word {
                    words.push(std::mem::take(&mut word));
                    in_word = false;
                }
            }
            c => {
                in_word = true;
                word.push(c);
            }
        }
    }
    if in_word {
        words.push(word);
    }
    words
}

#[cfg(test)]
mod tests {
    use super::shell_words;

    #[test]
    fn make_and_shell_quoting_is_undone() {
        assert_eq!(
            shell_words("-Wl,-rpath='$$ORIGIN'"),
            vec!["-Wl,-rpath=$ORIGIN"]
        );
        assert_eq!(
            shell_words(r#"-DX="a b" -O2  -lm"#),
            vec!["-DX=a b", "-O2", "-lm"]
        );
        assert_eq!(shell_words(r"a\ b ''"), vec!["a b", ""]);
        assert!(shell_words("   ").is_empty());
        assert_eq!(shell_words("'open"), vec!["open"]);
    }
}
