//! Module function descriptions: `S -> R? F ('(' (name (',' name)*)? ')')?`.

use pnet_bundle::Signature;

/// Parses a function description; `Err` carries a message.
pub fn parse(text: &str) -> Result<Signature, String> {
    let mut toks = Vec::new();
    let mut chars = text.char_indices().peekable();
    while let Some(&(i, c)) = chars.peek() {
        if c.is_whitespace() {
            chars.next();
        } else if c.is_ascii_alphabetic() || c == '_' {
            let mut end = i;
            while let Some(&(j, c)) = chars.peek() {
                if c.is_ascii_alphanumeric() || c == '_' {
                    end = j + c.len_utf8();
                    chars.next();
                } else {
                    break;
                }
            }
            toks.push(Tok::Name(&text[i..end]));
        } else if c == '(' || c == ')' || c == ',' {
            toks.push(Tok::Punct(c));
            chars.next();
        } else {
            return Err(format!(
                "unexpected character `{c}` in function description `{text}`"
            ));
        }
    }
    let names: Vec<&str> = toks
        .iter()
        .take_while(|t| matches!(t, Tok::Name(_)))
        .map(|t| match t {
            Tok::Name(n) => *n,
            Tok::Punct(_) => "",
        })
        .collect();
    let (result, function) = match names.as_slice() {
        [f] => (None, f.to_string()),
        [r, f] => (Some(r.to_string()), f.to_string()),
        [] => {
            return Err(format!(
                "missing function name in function description `{text}`"
            ));
        }
        _ => return Err(format!("too many names before the arguments in `{text}`")),
    };
    let rest = &toks[names.len()..];
    let mut args = Vec::new();
    match rest {
        [] => {}
        [Tok::Punct('('), inner @ .., Tok::Punct(')')] => {
            let mut expect_name = true;
            for t in inner {
                match (t, expect_name) {
                    (Tok::Name(n), true) => {
                        args.push(n.to_string());
                        expect_name = false;
                    }
                    (Tok::Punct(','), false) => expect_name = true,
                    _ => return Err(format!("malformed argument list in `{text}`")),
                }
            }
            if expect_name && !args.is_empty() {
                return Err(format!("trailing `,` in argument list of `{text}`"));
            }
        }
        _ => return Err(format!("malformed function description `{text}`")),
    }
    Ok(Signature {
        result,
        function,
        args,
    })
}

enum Tok<'a> {
    Name(&'a str),
    Punct(char),
}

#[cfg(test)]
mod tests {
    use super::parse;

    #[test]
    fn signatures() {
        let s = parse("s sum (p)").unwrap();
        assert_eq!(
            (s.result.as_deref(), s.function.as_str(), s.args.len()),
            (Some("s"), "sum", 1)
        );
        let s = parse("out call_hello_world()").unwrap();
        assert_eq!(
            (s.result.as_deref(), s.function.as_str(), s.args.len()),
            (Some("out"), "call_hello_world", 0)
        );
        let s = parse("f").unwrap();
        assert_eq!(
            (s.result, s.function.as_str(), s.args.len()),
            (None, "f", 0)
        );
        let s = parse("f (a, b,c)").unwrap();
        assert_eq!(s.args, vec!["a", "b", "c"]);
        assert!(parse("f (a,)").is_err());
        assert!(parse("a b c").is_err());
        assert!(parse("").is_err());
        assert!(parse("f (a b)").is_err());
        assert!(parse("f (a").is_err());
        assert!(parse("f - g").is_err());
    }
}
