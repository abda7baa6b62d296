use expect_test::{Expect, expect};

use super::print::LineIndex;
use super::*;
use crate::Severity;
use crate::span::MappedText;

fn render(src: &str) -> String {
    let (file, diags) = parse_file(FileId(0), src);
    let mut out = print_ast(&file, src);
    let lines = LineIndex::new(src);
    for d in &diags {
        let sev = match d.severity {
            Severity::Error => "error",
            Severity::Warning => "warning",
        };
        let at = match d.primary_span() {
            Some(s) => {
                let (l1, c1) = lines.line_col(s.start);
                let (l2, c2) = lines.line_col(s.end);
                format!("{l1}:{c1}-{l2}:{c2}")
            }
            None => "?".into(),
        };
        out.push_str(&format!("{sev}[{}] {at}: {}\n", d.code, d.message));
    }
    out
}

fn check(src: &str, expect: Expect) {
    expect.assert_eq(&render(src));
}

/// All `.xpnet`/`.xml` files of the corpus, sorted, as (path relative to the corpus, text).
fn corpus_files() -> Vec<(String, String)> {
    fn walk(dir: &std::path::Path, out: &mut Vec<std::path::PathBuf>) {
        let Ok(rd) = std::fs::read_dir(dir) else {
            return;
        };
        for e in rd.flatten() {
            let p = e.path();
            if p.is_dir() {
                walk(&p, out);
            } else if matches!(
                p.extension().and_then(|e| e.to_str()),
                Some("xpnet" | "xml")
            ) {
                out.push(p);
            }
        }
    }
    let root = pnet_tests::gpispace();
    let mut paths = Vec::new();
    walk(&root, &mut paths);
    paths.sort();
    paths
        .into_iter()
        .map(|p| {
            let text = std::fs::read_to_string(&p).expect("corpus file is UTF-8");
            let rel = p.strip_prefix(&root).unwrap_or(&p).display().to_string();
            (rel, text)
        })
        .collect()
}

#[test]
fn corpus_parses_without_errors() {
    if pnet_tests::corpus_absent() {
        return;
    }
    let files = corpus_files();
    assert_eq!(files.len(), 196, "corpus file count");
    let mut roots = std::collections::BTreeMap::<&str, usize>::new();
    let mut errors = Vec::new();
    let mut warnings = Vec::new();
    for (path, text) in &files {
        let (file, diags) = parse_file(FileId(0), text);
        let kind = match &file.root {
            None => "none",
            Some(Root::Defun(_)) => "defun",
            Some(Root::Template(_)) => "template",
            Some(Root::Structs(_)) => "structs",
            Some(Root::Props(_)) => "props",
        };
        *roots.entry(kind).or_default() += 1;
        let lines = LineIndex::new(text);
        for d in diags {
            let (l, c) = lines.line_col(d.primary_span().map_or(0, |s| s.start));
            let line = format!(
                "{path}:{l}:{c}: {}[{}] {}",
                if d.is_error() { "error" } else { "warning" },
                d.code,
                d.message
            );
            if d.is_error() {
                errors.push(line)
            } else {
                warnings.push(line)
            }
        }
    }
    println!("corpus: {} files, roots {roots:?}", files.len());
    println!("{} warnings:", warnings.len());
    for w in &warnings {
        println!("  {w}");
    }
    assert!(
        errors.is_empty(),
        "errors in the corpus:\n{}",
        errors.join("\n")
    );
    assert_eq!(roots.get("none"), None);
}

// ------------------------------------------------------------------ elements and attributes

#[test]
fn defun_with_everything() {
    check(
        r#"<?xml version="1.0" encoding="UTF-8"?>
<!-- a comment -->
<defun name="all" xmlns="http://www.xml.gpi-space.com/workflow" xmlns:xsi="http://www.w3.org/2001/XMLSchema-instance" xsi:schemaLocation="x y">
  <in name="a" type="long" place="pa"><properties name="p"><property key="k" value="v"/></properties></in>
  <out name="b" type="long"/>
  <inout name="c" type="string"/>
  <tunnel name="d" type="control" place="vd"/>
  <memory-buffer name="buf" read-only="true"><size>${a} * 8UL</size><alignment>8UL</alignment></memory-buffer>
  <memory-get allow-empty-ranges="true"><global>${g}</global><local>${l}</local></memory-get>
  <memory-put not-modified-in-module-call="true"><global>${g}</global><local>${l}</local></memory-put>
  <memory-getput><global>${g}</global><local>${l}</local></memory-getput>
  <struct name="point"><field name="x" type="double"/><struct name="inner"><field name="y" type="int"/></struct></struct>
  <include-structs href="types.xpnet"/>
  <properties name="fhg"><properties name="drts"><property key="wait">true</property></properties><include-properties href="p.xml"/></properties>
  <include-properties href="q.xml"/>
  <require key="gpu"/>
  <require key="fast" mandatory="false"/>
  <condition>${a} &gt; 0L</condition>
  <condition>true</condition>
  <expression>
    ${b} := ${a} + 1L;
  </expression>
</defun>
"#,
        expect![[r#"
            defun all @3:1
              in a: long place=pa @4:3
                properties p @4:39
                  property k = "v" @4:60
              out b: long @5:3
              inout c: string @6:3
              tunnel d: control place=vd @7:3
              memory-buffer buf read-only @8:3
                size `${a} * 8UL` @8:52
                alignment `8UL` @8:80
              memory-get allow-empty-ranges @9:3
                global `${g}` @9:49
                local `${l}` @9:69
              memory-put not-modified-in-module-call @10:3
                global `${g}` @10:58
                local `${l}` @10:78
              memory-getput @11:3
                global `${g}` @11:26
                local `${l}` @11:46
              struct point @12:3
                field x: double @12:24
                struct inner @12:55
                  field y: int @12:76
              include-structs "types.xpnet" @13:3
              properties fhg @14:3
                properties drts @14:26
                  property wait = "true" @14:50
                include-properties "p.xml" @14:99
              include-properties "q.xml" @15:3
              require gpu @16:3
              require fast mandatory=false @17:3
              condition `${a} > 0L` @18:14
              condition `true` @19:14
              expression `${b} := ${a} + 1L;` @20:15
        "#]],
    );
}

#[test]
fn net_places_transitions_connections() {
    check(
        r#"<defun name="n">
  <in name="i" type="long" place="p"/>
  <net>
    <struct name="s"><field name="f" type="int"/></struct>
    <properties name="net"><property key="k"/></properties>
    <place name="p" type="long"/>
    <place name="v" type="long" virtual="true" put_token="true"/>
    <place name="sh" type="long" shared_sink="true"/>
    <place name="g" type="string" generator="true"/>
    <place name="t" type="long"><token><value>1L</value></token><token><value>2L</value></token>
      <properties name="pp"><property key="x" value="y"/></properties></place>
    <place name="tt" type="long"><token>3L</token></place>
    <transition name="t1" priority="2" inline="false" produce_shared="true" consume_shared="true" passthrough_shared="true">
      <defun><in name="x" type="long"/><out name="y" type="long"/><expression>${y} := ${x}</expression></defun>
      <connect-in port="x" place="p"><properties name="c"><property key="k" value="v"/></properties></connect-in>
      <connect-out port="y" place="p"/>
      <connect-inout port="z" place="p"/>
      <connect-read port="r" place="p"/>
      <connect-out-many port="m" place="p"/>
      <connect-number-of-tokens port="n" place="p"/>
      <connect-response port="resp" to="x"/>
      <connect-eureka port="e"/>
      <place-map virtual="v" real="p"/>
      <condition>${x} &lt; 10L</condition>
      <require key="k" mandatory="true"/>
      <properties name="tp"><property key="k" value="v"/></properties>
    </transition>
    <transition name="t2" inline="true"><include-function href="f.xpnet"/></transition>
    <transition name="t3"><use name="f"/></transition>
  </net>
</defun>
"#,
        expect![[r#"
            defun n @1:1
              in i: long place=p @2:3
              net @3:3
                struct s @4:5
                  field f: int @4:22
                properties net @5:5
                  property k @5:28
                place p: long @6:5
                place v: long virtual put_token @7:5
                place sh: long shared_sink @8:5
                place g: string generator @9:5
                place t: long @10:5
                  token `1L` @10:33
                  token `2L` @10:65
                  properties pp @11:7
                    property x = "y" @11:29
                place tt: long @12:5
                  token `3L` @12:34
                transition t1 priority=2 inline=false produce_shared consume_shared passthrough_shared @13:5
                  connect-in x p @15:7
                    properties c @15:38
                      property k = "v" @15:59
                  connect-out y p @16:7
                  connect-inout z p @17:7
                  connect-read r p @18:7
                  connect-out-many m p @19:7
                  connect-number-of-tokens n p @20:7
                  connect-response resp x @21:7
                  connect-eureka e @22:7
                  place-map v -> p @23:7
                  condition `${x} < 10L` @24:18
                  require k @25:7
                  properties tp @26:7
                    property k = "v" @26:29
                  defun @14:7
                    in x: long @14:14
                    out y: long @14:40
                    expression `${y} := ${x}` @14:79
                transition t2 inline=true @28:5
                  include-function "f.xpnet" @28:41
                transition t3 @29:5
                  use f @29:38
        "#]],
    );
}

#[test]
fn templates_and_specialize() {
    check(
        r#"<defun>
  <net>
    <template name="tmpl">
      <template-parameter type="T"/>
      <template-parameter type="U"/>
      <defun><in name="x" type="T"/><out name="y" type="U"/><expression/></defun>
    </template>
    <include-template href="t.xpnet"/>
    <specialize name="spec" use="tmpl">
      <type-map replace="T" with="long"/>
      <type-map replace="U" with="string"/>
      <type-get name="point"/>
    </specialize>
  </net>
</defun>
"#,
        expect![[r#"
            defun @1:1
              net @2:3
                template tmpl <T, U> @3:5
                  defun @6:7
                    in x: T @6:14
                    out y: U @6:37
                    expression `` @6:61
                include-template "t.xpnet" @8:5
                specialize spec use=tmpl @9:5
                  type-map T -> long @10:26
                  type-map U -> string @11:26
                  type-get point @12:23
        "#]],
    );
}

#[test]
fn template_root() {
    check(
        r#"<template name="t"><template-parameter type="T"/><defun name="f"><in name="x" type="T"/><expression/></defun></template>"#,
        expect![[r#"
            template t <T> @1:1
              defun f @1:50
                in x: T @1:66
                expression `` @1:89
        "#]],
    );
}

#[test]
fn structs_root() {
    check(
        r#"<structs>
  <struct name="a"><field name="x" type="long"/></struct>
  <include-structs href="b.xpnet"/>
</structs>"#,
        expect![[r#"
            structs
              struct a @2:3
                field x: long @2:20
              include-structs "b.xpnet" @3:3
        "#]],
    );
}

#[test]
fn props_root() {
    check(
        r#"<props><property key="top" value="1"/><properties name="g"><property key="k">  text value  </property></properties><include-properties href="x"/></props>"#,
        expect![[r#"
            props @1:1
              property top = "1" @1:8
              properties g @1:39
                property k = "text value" @1:60
              include-properties "x" @1:116
        "#]],
    );
}

#[test]
fn module_with_everything() {
    check(
        r#"<defun name="m">
  <in name="a" type="long"/>
  <out name="b" type="long"/>
  <module name="mod" function="b fun (a)" target="gpu" pass_context="true" require_function_unloads_without_rest="false" require_module_unloads_without_rest="false">
    <cinclude href="iostream"/>
    <cinclude href="vector"/>
    <ld flag="-lm"/>
    <cxx flag="-O3"/>
    <eureka-group>"group"</eureka-group>
    <code><![CDATA[
      return a + 1;
    ]]></code>
  </module>
</defun>"#,
        expect![[r#"
            defun m @1:1
              in a: long @2:3
              out b: long @3:3
              module mod function="b fun (a)" target=gpu pass_context require_function_unloads_without_rest=false require_module_unloads_without_rest=false @4:3
                eureka-group `"group"` @9:19
                cinclude "iostream" @5:5
                cinclude "vector" @6:5
                ld "-lm" @7:15
                cxx "-O3" @8:16
                code `return a + 1;` @10:20
        "#]],
    );
}

#[test]
fn module_eureka_attribute_and_defaults() {
    check(
        r#"<defun><module name="m" function="f()" eureka-group="&quot;g&quot;"/></defun>"#,
        expect![[r#"
            defun @1:1
              module m function="f()" @1:8
                eureka-group `"g"` @1:54
        "#]],
    );
}

#[test]
fn modules_with_preferences() {
    check(
        r#"<defun name="multi">
  <in name="a" type="long"/>
  <modules>
    <preferences><target>gpu</target><target> cpu </target></preferences>
    <module name="m" function="f (a)" target="gpu"><code>x</code></module>
    <module name="m" function="f (a)" target="cpu"/>
  </modules>
</defun>"#,
        expect![[r#"
            defun multi @1:1
              in a: long @2:3
              modules @3:3
                preferences gpu cpu @4:26
                module m function="f (a)" target=gpu @5:5
                  code `x` @5:58
                module m function="f (a)" target=cpu @6:5
        "#]],
    );
}

// ------------------------------------------------------------------ diagnostics

#[test]
fn unknown_elements_and_attributes_warn() {
    check(
        r#"<defun name="x" colour="red">
  <frobnicate/>
  <in name="a" type="long" extra="1"/>
  <net>
    <place name="p" type="long" weird="yes"><bogus/></place>
    <gadget><place name="q" type="long"/></gadget>
    <transition name="t"><use name="u"/><connect-in port="a" place="p" when="now"/><nope/></transition>
  </net>
</defun>"#,
        expect![[r#"
            defun x @1:1
              in a: long @3:3
              net @4:3
                place p: long @5:5
                transition t @7:5
                  connect-in a p @7:41
                  use u @7:37
            warning[unexpected-element] 1:17-1:23: unexpected attribute `colour` on `defun`
            warning[unexpected-element] 2:4-2:14: unexpected element `frobnicate` in `defun`
            warning[unexpected-element] 3:28-3:33: unexpected attribute `extra` on `in`
            warning[unexpected-element] 5:33-5:38: unexpected attribute `weird` on `place`
            warning[unexpected-element] 5:46-5:51: unexpected element `bogus` in `place`
            warning[unexpected-element] 6:6-6:12: unexpected element `gadget` in `net`
            warning[unexpected-element] 7:72-7:76: unexpected attribute `when` on `connect-in`
            warning[unexpected-element] 7:85-7:89: unexpected element `nope` in `transition`
        "#]],
    );
}

#[test]
fn stray_text_warns() {
    check(
        "<defun>hello<expression/>\n  world  <!-- c --></defun>",
        expect![[r#"
            defun @1:1
              expression `` @1:13
            warning[unexpected-element] 1:8-1:13: unexpected text in `defun`
            warning[unexpected-element] 2:3-2:8: unexpected text in `defun`
        "#]],
    );
}

#[test]
fn missing_attributes() {
    check(
        r#"<defun>
  <in type="long"/>
  <out name="b"/>
  <net>
    <place name="p"/>
    <place type="long"/>
    <transition><use name="u"/></transition>
    <transition name="t"><use/><connect-in place="p"/><connect-out port="x"/><connect-response port="r"/><connect-eureka/><place-map virtual="v"/></transition>
    <specialize name="s"/>
    <include-template/>
  </net>
  <struct><field name="x"/></struct>
  <properties><property value="v"/></properties>
  <require/>
  <memory-buffer><size>1UL</size></memory-buffer>
</defun>"#,
        expect![[r#"
            defun @1:1
              net @4:3
                transition t @8:5
                  <no body>
            error[missing_attribute] 2:4-2:6: element `in` needs the attribute `name`
            error[missing_attribute] 3:4-3:7: element `out` needs the attribute `type`
            error[missing_attribute] 5:6-5:11: element `place` needs the attribute `type`
            error[missing_attribute] 6:6-6:11: element `place` needs the attribute `name`
            error[missing_attribute] 7:6-7:16: element `transition` needs the attribute `name`
            error[missing_attribute] 8:27-8:30: element `use` needs the attribute `name`
            error[missing_attribute] 8:33-8:43: element `connect-in` needs the attribute `port`
            error[missing_attribute] 8:56-8:67: element `connect-out` needs the attribute `place`
            error[missing_attribute] 8:79-8:95: element `connect-response` needs the attribute `to`
            error[missing_attribute] 8:107-8:121: element `connect-eureka` needs the attribute `port`
            error[missing_attribute] 8:124-8:133: element `place-map` needs the attribute `real`
            error[missing_attribute] 9:6-9:16: element `specialize` needs the attribute `use`
            error[missing_attribute] 10:6-10:22: element `include-template` needs the attribute `href`
            error[missing_attribute] 12:4-12:10: element `struct` needs the attribute `name`
            error[missing_attribute] 12:12-12:17: element `field` needs the attribute `type`
            error[missing_attribute] 13:4-13:14: element `properties` needs the attribute `name`
            error[missing_attribute] 13:16-13:24: element `property` needs the attribute `key`
            error[missing_attribute] 14:4-14:11: element `require` needs the attribute `key`
            error[missing_attribute] 15:4-15:17: element `memory-buffer` needs the attribute `name`
        "#]],
    );
}

#[test]
fn booleans() {
    check(
        r#"<defun><net>
  <place name="a" type="long" virtual="TRUE" put_token="yes" shared_sink="1" generator="on"/>
  <place name="b" type="long" virtual="False" put_token="no" shared_sink="0" generator="off"/>
  <place name="c" type="long" virtual="maybe" put_token="" generator="truee"/>
  <transition name="t" inline="sometimes" produce_shared="2"><use name="u"/><require key="k" mandatory="nope"/></transition>
</net></defun>"#,
        expect![[r#"
            defun @1:1
              net @1:8
                place a: long virtual put_token shared_sink generator @2:3
                place b: long @3:3
                place c: long @4:3
                transition t @5:3
                  require k @5:77
                  use u @5:73
            error[invalid_bool] 4:40-4:45: attribute `virtual` must be a boolean (`true` or `false`), not `maybe`
            error[invalid_bool] 4:58-4:58: attribute `put_token` must be a boolean (`true` or `false`), not ``
            error[invalid_bool] 4:71-4:76: attribute `generator` must be a boolean (`true` or `false`), not `truee`
            error[invalid_bool] 5:32-5:41: attribute `inline` must be a boolean (`true` or `false`), not `sometimes`
            error[invalid_bool] 5:59-5:60: attribute `produce_shared` must be a boolean (`true` or `false`), not `2`
            error[invalid_bool] 5:105-5:109: attribute `mandatory` must be a boolean (`true` or `false`), not `nope`
        "#]],
    );
}

#[test]
fn defun_bodies() {
    check(
        r#"<defun name="none"><in name="a" type="long"/></defun>"#,
        expect![[r#"
            defun none @1:1
              in a: long @1:20
              <no body>
            error[missing_body] 1:2-1:7: a `defun` needs a body: `expression`, `module`, `modules` or `net`
        "#]],
    );
    check(
        r#"<defun name="two"><expression/><net/><module name="m" function="f()"/></defun>"#,
        expect![[r#"
            defun two @1:1
              expression `` @1:19
            error[multiple_bodies] 1:33-1:36: a `defun` has exactly one body; this `net` is a second one
            error[multiple_bodies] 1:39-1:45: a `defun` has exactly one body; this `module` is a second one
        "#]],
    );
}

#[test]
fn transition_bodies() {
    check(
        r#"<defun><net>
  <transition name="none"><connect-in port="a" place="p"/></transition>
  <transition name="two"><use name="u"/><include-function href="f.xpnet"/><defun><expression/></defun></transition>
</net></defun>"#,
        expect![[r#"
            defun @1:1
              net @1:8
                transition none @2:3
                  connect-in a p @2:27
                  <no body>
                transition two @3:3
                  use u @3:37
            error[missing_body] 2:4-2:14: a `transition` needs a `defun`, an `include-function` or a `use`
            error[multiple_bodies] 3:42-3:58: a `transition` has exactly one of `defun`, `include-function`, `use`; this `include-function` is a second one
            error[multiple_bodies] 3:76-3:81: a `transition` has exactly one of `defun`, `include-function`, `use`; this `defun` is a second one
        "#]],
    );
}

#[test]
fn template_without_defun() {
    check(
        r#"<template name="t"><template-parameter type="T"/></template>"#,
        expect![[r#"
        template t <T> @1:1
          <no defun>
        error[missing_body] 1:2-1:10: a `template` needs a `defun`
    "#]],
    );
}

#[test]
fn memory_elements_incomplete_or_repeated() {
    check(
        r#"<defun><memory-buffer name="b"><alignment>1UL</alignment></memory-buffer><memory-get><global>g</global></memory-get><memory-put><global>a</global><global>b</global><local>l</local></memory-put><expression/></defun>"#,
        expect![[r#"
            defun @1:1
              memory-buffer b @1:8
                alignment `1UL` @1:43
              memory-get @1:74
                global `g` @1:94
              memory-put @1:117
                global `a` @1:137
                local `l` @1:172
              expression `` @1:194
            error[missing_element] 1:9-1:22: `memory-buffer` needs a `size`
            error[missing_element] 1:75-1:85: `memory-get` needs a `local`
            error[duplicate_element] 1:148-1:154: `global` may appear only once in `memory-put`
        "#]],
    );
}

#[test]
fn unknown_root() {
    check(
        r#"<workflow><defun/></workflow>"#,
        expect![[r#"
        <no root>
        error[unknown_root] 1:2-1:10: unknown root element `workflow` (expected `defun`, `template`, `structs` or `props`)
    "#]],
    );
}

#[test]
fn malformed_xml_positions() {
    check(
        "<defun>\n  <net>\n  </defun>\n",
        expect![[r#"
            defun @1:1
              net @2:3
            error[xml_syntax] 2:4-2:7: malformed XML: `<net>` is not closed before `</defun>`
        "#]],
    );
    check(
        "<defun name=\"a\" name=\"b\"/>",
        expect![[r#"
            defun a @1:1
              <no body>
            error[xml_syntax] 1:17-1:25: malformed XML: a second attribute `name`
            error[missing_body] 1:2-1:7: a `defun` needs a body: `expression`, `module`, `modules` or `net`
        "#]],
    );
    check(
        "<defun>\n  <expression>a &foo; b</expression>\n</defun>",
        expect![[r#"
            defun @1:1
              expression `a &foo; b` @2:15
            error[xml_syntax] 2:17-2:18: malformed XML: an unknown entity reference `&foo;` (write `&amp;` for `&`)
        "#]],
    );
    check(
        "<defun>",
        expect![[r#"
            defun @1:1
              <no body>
            error[xml_syntax] 1:2-1:7: malformed XML: `<defun>` is never closed
            error[missing_body] 1:2-1:7: a `defun` needs a body: `expression`, `module`, `modules` or `net`
        "#]],
    );
    check(
        "",
        expect![[r#"
        <no root>
        error[xml_syntax] 1:1-1:1: malformed XML: the document does not have a root node
    "#]],
    );
    check(
        "<!-- ä ö -->\n<defun>ä<</defun>",
        expect![[r#"
            defun @2:1
              <no body>
            error[xml_syntax] 2:9-2:10: malformed XML: a stray `<` (write `&lt;`)
            warning[unexpected-element] 2:8-2:10: unexpected text in `defun`
            error[missing_body] 2:2-2:7: a `defun` needs a body: `expression`, `module`, `modules` or `net`
        "#]],
    );
    check(
        "<!DOCTYPE defun [<!ENTITY e \"x\">]><defun/>",
        expect![[r#"
            defun @1:35
              <no body>
            error[xml_syntax] 1:1-1:35: malformed XML: a document type declaration is not supported
            error[missing_body] 1:36-1:41: a `defun` needs a body: `expression`, `module`, `modules` or `net`
        "#]],
    );
}

// ------------------------------------------------------------------ text mapping

/// Every mapped text of a file, in document order (roughly), with its kind.
fn texts(file: &File) -> Vec<(&'static str, &MappedText)> {
    fn defun<'a>(d: &'a Defun, out: &mut Vec<(&'static str, &'a MappedText)>) {
        for m in &d.memory_buffers {
            out.extend(m.size.iter().map(|t| ("size", t)));
            out.extend(m.alignment.iter().map(|t| ("alignment", t)));
        }
        for m in &d.memory_transfers {
            out.extend(m.global.iter().map(|t| ("global", t)));
            out.extend(m.local.iter().map(|t| ("local", t)));
        }
        out.extend(d.conditions.iter().map(|t| ("condition", t)));
        let module = |m: &'a ModuleDecl, out: &mut Vec<(&'static str, &'a MappedText)>| {
            out.extend(m.eureka_group.iter().map(|t| ("eureka-group", t)));
            out.extend(m.code.iter().map(|t| ("code", t)));
        };
        match &d.body {
            Some(DefunBody::Expression(t)) => out.push(("expression", t)),
            Some(DefunBody::Module(m)) => module(m, out),
            Some(DefunBody::Modules(ms)) => ms.modules.iter().for_each(|m| module(m, out)),
            Some(DefunBody::Net(n)) => {
                for t in &n.templates {
                    if let TemplateItem::Inline(Template { defun: Some(d), .. }) = t {
                        defun(d, out);
                    }
                }
                for p in &n.places {
                    for t in &p.tokens {
                        out.extend(t.values.iter().map(|v| ("value", v)));
                    }
                }
                for t in &n.transitions {
                    out.extend(t.conditions.iter().map(|c| ("condition", c)));
                    if let Some(TransitionBody::Defun(d)) = &t.body {
                        defun(d, out);
                    }
                }
            }
            None => {}
        }
    }
    let mut out = Vec::new();
    match &file.root {
        Some(Root::Defun(d)) => defun(d, &mut out),
        Some(Root::Template(t)) => {
            if let Some(d) = &t.defun {
                defun(d, &mut out);
            }
        }
        _ => {}
    }
    out
}

/// Where `needle` (found in the first mapped text) lies in the file: its line:col and the
/// raw file text it came from.
fn locate(src: &str, needle: &str) -> String {
    let (file, diags) = parse_file(FileId(0), src);
    assert!(diags.is_empty(), "{diags:?}");
    let all = texts(&file);
    let Some((_, t)) = all.first() else {
        return "no text".into();
    };
    let Some(i) = t.text.find(needle) else {
        return format!("{needle:?} not in {:?}", t.text);
    };
    let (s, e) = (i as u32, (i + needle.len()) as u32);
    let (fs, fe) = (t.file_offset(s) as usize, t.file_offset(e) as usize);
    let (l, c) = LineIndex::new(src).line_col(fs as u32);
    let span = t.span(s, e);
    format!(
        "{needle:?} @{l}:{c} raw {:?} span {:?}",
        &src[fs..fe],
        &src[span.range()]
    )
}

#[test]
fn entity_mapping_points_at_the_file_column() {
    let src = "<defun><condition>${a} &lt; ${b}</condition><expression/></defun>";
    expect![[r#""${b}" @1:29 raw "${b}" span "${b}""#]].assert_eq(&locate(src, "${b}"));
    expect![[r#""<" @1:24 raw "&lt;" span "&""#]].assert_eq(&locate(src, "<"));
    expect![[r#""< $" @1:24 raw "&lt; $" span "&lt; $""#]].assert_eq(&locate(src, "< $"));
    expect![[r#""${a}" @1:19 raw "${a}" span "${a}""#]].assert_eq(&locate(src, "${a}"));
}

#[test]
fn mapping_through_cdata_comments_char_refs_and_line_ends() {
    let src = "<defun><expression>${x} &amp;&amp; <![CDATA[${y} < 1]]> ||<!-- <c> -->\r\n ${z}&#x3E;&#62; \"ä\" &quot;q&quot;</expression></defun>";
    let (file, _) = parse_file(FileId(0), src);
    let all = texts(&file);
    expect![[r#""${x} && ;${y} < 1; ||;\n ${z}>> \"ä\" \"q\"""#]]
        .assert_eq(&format!("{:?}", all[0].1.text));
    let got: Vec<String> = ["&& ", "${y}", "< 1", "||", "\n", "${z}", ">>", "\"ä\"", "q"]
        .iter()
        .map(|n| locate(src, n))
        .collect();
    expect![[r#"
        "&& " @1:25 raw "&amp;&amp; " span "&amp;&amp; "
        "${y}" @1:45 raw "${y}" span "${y}"
        "< 1" @1:50 raw "< 1" span "< 1"
        "||" @1:57 raw "||" span "||"
        "\n" @1:71 raw "\r\n" span "\r"
        "${z}" @2:2 raw "${z}" span "${z}"
        ">>" @2:6 raw "&#x3E;&#62;" span "&#x3E;&"
        "\"ä\"" @2:18 raw "\"ä\"" span "\"ä\""
        "q" @2:28 raw "q" span "q""#]]
    .assert_eq(&got.join("\n"));
}

#[test]
fn mapping_of_crlf_and_several_text_pieces() {
    let src = "<defun>\r\n<expression>a\r\nb<![CDATA[c\r\nd]]>e<!---->f</expression></defun>";
    let (file, _) = parse_file(FileId(0), src);
    let all = texts(&file);
    expect![[r#""a\nb;c\nd;e;f""#]].assert_eq(&format!("{:?}", all[0].1.text));
    let got: Vec<String> = ["b", "c", "d", "e", "f"]
        .iter()
        .map(|n| locate(src, n))
        .collect();
    expect![[r#"
        "b" @3:1 raw "b" span "b"
        "c" @3:11 raw "c" span "c"
        "d" @4:1 raw "d" span "d"
        "e" @4:5 raw "e" span "e"
        "f" @4:13 raw "f" span "f""#]]
    .assert_eq(&got.join("\n"));
}

#[test]
fn mapping_of_attribute_texts_and_empty_texts() {
    let src = "<defun><module name=\"m\" function=\"f()\" eureka-group=\"&quot;g&quot;\n+ ${x}\"/></defun>";
    let (file, _) = parse_file(FileId(0), src);
    let t = texts(&file)[0].1;
    expect![[r#""\"g\" + ${x}""#]].assert_eq(&format!("{:?}", t.text));
    expect![[r#""${x}" @2:3 raw "${x}" span "${x}""#]].assert_eq(&locate(src, "${x}"));
    // An empty expression maps offset 0 to where its content would be.
    for (src, want) in [
        ("<defun><expression></expression></defun>", 19),
        ("<defun><expression/></defun>", 7),
        ("<defun><expression><!-- x --></expression></defun>", 19),
    ] {
        let (file, _) = parse_file(FileId(0), src);
        assert_eq!(texts(&file)[0].1.file_offset(0), want, "{src}");
        assert_eq!(texts(&file)[0].1.text, "");
    }
}

/// Checks that every character of every mapped text comes from where the map says: the same
/// character, an entity or character reference, a `\r` normalized to `\n`, or the separator
/// joining two pieces of an expression or condition (at the end of the first piece).
fn check_mapping(path: &str, src: &str, t: &MappedText) {
    assert!(
        t.map.windows(2).all(|w| w[0].0 < w[1].0 && w[0].1 < w[1].1),
        "{path}: map not increasing: {:?}",
        t.map
    );
    for (i, c) in t.text.char_indices() {
        let f = t.file_offset(i as u32) as usize;
        let raw = &src[f..];
        let ok = raw.starts_with(c)
            || raw.starts_with('&')
            || (c == '\n' && raw.starts_with('\r'))
            || (c == ' ' && raw.starts_with(['\n', '\t', '\r']))
            // the `;`/`&&` joining the pieces of an expression/condition: where a piece ends
            || (matches!(c, ';' | '&') && raw.starts_with(['<', ']']));
        assert!(
            ok,
            "{path}: text offset {i} ({c:?}) maps to file offset {f} ({:?})",
            &raw[..raw.len().min(10)]
        );
    }
}

#[test]
fn corpus_texts_map_back_to_their_source() {
    if pnet_tests::corpus_absent() {
        return;
    }
    let mut n = 0;
    for (path, src) in corpus_files() {
        let (file, _) = parse_file(FileId(0), &src);
        for (_, t) in texts(&file) {
            check_mapping(&path, &src, t);
            n += 1;
        }
    }
    assert!(n > 500, "only {n} texts");
}

// ------------------------------------------------------------------ snapshots of corpus nets

fn snapshot(path: &str, expect: Expect) {
    if pnet_tests::corpus_absent() {
        return;
    }
    let src = std::fs::read_to_string(pnet_tests::gpispace().join(path)).expect("corpus file");
    check(&src, expect);
}

#[test]
fn snapshot_sum_module() {
    snapshot(
        "share/doc/example/sum/sum.xpnet",
        expect![[r#"
        defun sum @4:1
          in p: pair @8:3
          out s: long @9:3
          include-structs "pair.xpnet" @6:3
          module sum function="s sum (p)" @11:3
            cinclude "sum.h" @13:5
            code `return ::sum (p.x,p.y);` @15:20
    "#]],
    );
}

#[test]
fn snapshot_virtual_place_with_token() {
    snapshot(
        "test/xml/xpnets/virtual_place_with_token_can_be_synthesized.xpnet",
        expect![[r#"
        defun virtual_place_with_token_can_be_synthesized @1:1
          net @2:3
            place p: int virtual @3:5
              token `0` @4:7
            transition inner @8:5
              place-map p -> p @15:7
              defun @9:7
                tunnel p: int place=p @10:9
                net @11:9
                  place p: int virtual @12:11
    "#]],
    );
}

#[test]
fn snapshot_template_three() {
    snapshot(
        "share/doc/example/template/three.xpnet",
        expect![[r#"
        template three <T> @4:1
          defun @6:3
            in x: T @7:5
            out a: T @8:5
            out b: T @9:5
            out c: T @10:5
            expression `${a} := ${x}; ${b} := ${x}; ${c} := ${x}` @12:17
    "#]],
    );
}

#[test]
fn snapshot_memory_transfer() {
    snapshot(
        "share/xml/lib/stream/mark_free.xpnet",
        expect![[r#"
        defun @4:1
          in work_package: work_package @7:3
          memory-buffer ptr_flag @8:3
            size `${work_package.meta.size}` @9:11
          memory-put not-modified-in-module-call @13:3
            global `stack_push (List(), ${work_package.meta})` @14:13
            local `${range.buffer} := "ptr_flag"; ${range.offset} := 0UL; ${range.size} := ${work_package.meta.size}; stack_push (List(), ${range})` @17:12
          include-structs "work_package.xpnet" @5:3
          module stream function="free (work_package, ptr_flag)" @24:3
            cinclude "gspc/drts/stream.hpp" @26:5
            ld "-lgspc" @28:15
            cxx "--std=c++17" @27:16
            code `gspc::stream::mark_free ( work_package.f...` (3 lines) @29:20
    "#]],
    );
}

// ------------------------------------------------------------------ robustness

mod robustness {
    use proptest::prelude::*;

    use super::*;

    fn parse_all(src: &str) {
        let (file, diags) = parse_file(FileId(0), src);
        let _ = print_ast(&file, src);
        for (path, t) in texts(&file) {
            check_mapping(path, src, t);
        }
        for d in diags {
            if let Some(s) = d.primary_span() {
                assert!(s.start <= s.end && s.end as usize <= src.len(), "{d:?}");
            }
        }
    }

    fn corpus_texts() -> Vec<String> {
        corpus_files().into_iter().map(|(_, t)| t).collect()
    }

    /// A corpus file picked by index.
    fn pick(files: &[String], i: usize) -> &str {
        &files[i % files.len()]
    }

    /// The nearest char boundary at or below `i`.
    fn floor(s: &str, i: usize) -> usize {
        let mut i = i.min(s.len());
        while !s.is_char_boundary(i) {
            i -= 1;
        }
        i
    }

    proptest! {
        #[test]
        fn random_bytes_never_panic(bytes in proptest::collection::vec(any::<u8>(), 0..400)) {
            parse_all(&String::from_utf8_lossy(&bytes));
        }

        #[test]
        fn random_xmlish_text_never_panics(s in "[<>/=\"'a-z &;#x0-9!\\[\\]CDAT?-]{0,200}") {
            parse_all(&s);
            parse_all(&format!("<defun><expression>{s}</expression></defun>"));
            parse_all(&format!("<defun name=\"{s}\"><net><place name=\"p\" type=\"t\"><token><value>{s}</value></token></place></net></defun>"));
        }

    }

    /// Runs `test` on `strategy` as `proptest!` would, after a guard: without the corpus there
    /// is nothing to truncate or mutate.
    fn run_on_corpus<S: Strategy>(strategy: S, test: impl Fn(S::Value)) {
        if pnet_tests::corpus_absent() {
            return;
        }
        let config = ProptestConfig {
            source_file: Some(file!()),
            ..ProptestConfig::default()
        };
        let mut runner = proptest::test_runner::TestRunner::new(config);
        if let Err(e) = runner.run(&strategy, |v| {
            test(v);
            Ok(())
        }) {
            panic!("{e}\n{runner}");
        }
    }

    #[test]
    fn truncated_corpus_files_never_panic() {
        let files = corpus_texts();
        run_on_corpus((any::<usize>(), any::<usize>()), |(i, cut)| {
            let f = pick(&files, i);
            let cut = floor(f, cut % (f.len() + 1));
            parse_all(&f[..cut]);
        });
    }

    #[test]
    fn mutated_corpus_files_never_panic() {
        let files = corpus_texts();
        let edits =
            proptest::collection::vec((0u8..3, any::<usize>(), 0usize..40, any::<u8>()), 1..8);
        run_on_corpus((any::<usize>(), edits), |(i, edits)| {
            let mut f = pick(&files, i).to_string();
            for (kind, at, len, byte) in edits {
                let a = floor(&f, at % (f.len() + 1));
                let b = floor(&f, a + len);
                match kind {
                    0 => f.replace_range(a..b, ""),
                    1 => f.insert_str(a, &String::from_utf8_lossy(&[byte])),
                    _ => {
                        let dup = f[a..b].to_string();
                        f.insert_str(a, &dup);
                    }
                }
            }
            parse_all(&f);
        });
    }

    #[test]
    fn deep_nesting_is_reported_not_overflowed() {
        let n = 5000;
        let src = format!(
            "<structs>{}{}</structs>",
            "<struct name=\"s\">".repeat(n),
            "</struct>".repeat(n)
        );
        let (_, diags) = parse_file(FileId(0), &src);
        assert!(
            diags.iter().any(|d| d.code == "nesting_too_deep"),
            "{:?}",
            diags.first()
        );
    }
}

#[test]
fn elements_inside_texts_are_skipped() {
    check(
        "<defun><expression>${a} <b/>:= 1<!-- c --></expression></defun>",
        expect![[r#"
            defun @1:1
              expression `${a} := 1` @1:20
            warning[unexpected-element] 1:26-1:27: unexpected element `b` in `expression`
        "#]],
    );
}

/// As GPI-Space reads them: the pieces of an `<expression>` (text runs and CDATA sections,
/// split by comments too) are joined with `;`, those of a `<condition>` with `:and:` (written
/// `&&`, the same operator); pieces that are only whitespace do not count.
#[test]
fn expression_and_condition_pieces_are_joined() {
    let src = "<defun><condition>${a} :lt: 1<!-- c --> ${b} || ${c}</condition>\
        <condition>\n  <![CDATA[${a} < 2]]>\n</condition>\
        <expression>${x} := 1 <![CDATA[${y} := 2]]><!-- c -->\n<![CDATA[${z} := 3]]> </expression></defun>";
    let (file, diags) = parse_file(FileId(0), src);
    assert!(diags.is_empty(), "{diags:?}");
    let out: Vec<String> = texts(&file)
        .into_iter()
        .map(|(_, t)| {
            let (e, diags) = crate::expr::parse(t);
            assert!(diags.is_empty(), "{diags:?}");
            format!("{:?}  =>  {}", t.text, crate::expr::to_sexpr(&e))
        })
        .collect();
    expect![[r#"
        "${a} :lt: 1&& ${b} || ${c}"  =>  (|| (&& (< ${a} 1) ${b}) ${c})
        "${a} < 2"  =>  (< ${a} 2)
        "${x} := 1 ;${y} := 2;${z} := 3"  =>  (seq (:= ${x} 1) (:= ${y} 2) (:= ${z} 3))"#]]
    .assert_eq(&out.join("\n"));
}

// ------------------------------------------------------------------ error tolerance

/// A net to damage: places `a`, `b`, transitions `t`, `u`.
const TOLERANT_NET: &str = r#"<defun name="n">
  <net>
    <place name="a" type="long"/>
    <place name="b" type="long"/>
    <transition name="t">
      <defun>
        <in name="x" type="long"/>
        <out name="y" type="long"/>
        <expression>${y} := ${x} + 1</expression>
      </defun>
      <connect-in port="x" place="a"/>
      <connect-out port="y" place="b"/>
    </transition>
    <transition name="u">
      <defun><in name="x" type="long"/><expression/></defun>
      <connect-in port="x" place="b"/>
    </transition>
  </net>
</defun>
"#;

/// What survives of a damaged net: the root's name, the places, the transitions (each with
/// its ports and connections), and the diagnostics as `code `text at the span``.
fn survivors(src: &str) -> String {
    let (file, diags) = parse_file(FileId(0), src);
    let mut out = String::new();
    match &file.root {
        Some(Root::Defun(d)) => {
            let name = d.name.as_ref().map_or("?", |n| n.text.as_str());
            out.push_str(&format!("defun {name}"));
            if let Some(DefunBody::Net(net)) = &d.body {
                let places: Vec<_> = net.places.iter().map(|p| p.name.text.as_str()).collect();
                out.push_str(&format!("; places {}", places.join(" ")));
                for t in &net.transitions {
                    out.push_str(&format!("; transition {}", t.name.text));
                    if let Some(TransitionBody::Defun(d)) = &t.body {
                        for p in &d.ports {
                            out.push_str(&format!(" {}", p.name.text));
                        }
                    }
                    out.push_str(&format!(" ({} connections)", t.connections.len()));
                }
            }
        }
        Some(_) => out.push_str("another root"),
        None => out.push_str("<no root>"),
    }
    out.push('\n');
    for d in &diags {
        let s = d.primary_span().expect("a primary span");
        let (start, end) = (s.start as usize, s.end as usize);
        assert!(start <= end && end <= src.len(), "{d:?}");
        out.push_str(&format!(
            "  {} `{}`: {}\n",
            d.code,
            &src[start..end],
            d.message
        ));
    }
    out
}

#[test]
fn damaged_nets_keep_the_rest_of_the_tree() {
    let u = "    <transition name=\"u\">";
    let a = "    <place name=\"a\" type=\"long\"/>";
    let net_end = "  </net>";
    // (what, the text replaced, its replacement)
    let cases: &[(&str, &str, String)] = &[
        ("half-typed tag", u, format!("    <tran\n{u}")),
        (
            "half-typed attribute",
            u,
            format!("    <place name=\"c\" type=\n{u}"),
        ),
        (
            "unclosed attribute value",
            u,
            format!("    <place name=\"c\" type=\"long/>\n{u}"),
        ),
        (
            "missing `>`",
            u,
            format!("    <place name=\"c\" type=\"long\"\n{u}"),
        ),
        (
            "missing `/>`",
            u,
            format!("    <place name=\"c\" type=\"long\"/\n{u}"),
        ),
        (
            "a transition being typed",
            net_end,
            format!("    <transition name=\"v\"\n{net_end}"),
        ),
        (
            "an unclosed CDATA section",
            "${x} + 1",
            "<![CDATA[${x} < 1".into(),
        ),
        ("an unclosed comment", a, format!("{a}\n    <!-- about b")),
        (
            "a parent's missing `>`",
            "<transition name=\"t\">",
            "<transition name=\"t\"".into(),
        ),
        (
            "a transition not closed yet",
            u,
            format!("    <transition name=\"v\">\n      <use name=\"w\"/>\n{u}"),
        ),
        ("stray `<`", "${x} + 1", "${x} < 1".into()),
        ("stray `&`", "${x} + 1", "${x} & 1".into()),
        ("stray `<` between elements", a, format!("{a} <")),
        (
            "unclosed elements at the end",
            "  </net>\n</defun>\n",
            "    <transition name=\"v\">\n      <use name=\"w\"/>\n".into(),
        ),
        (
            "a closing tag of an outer element",
            net_end,
            format!("    <place name=\"c\" type=\"long\">\n{net_end}"),
        ),
        (
            "a closing tag of no open element",
            "</expression>",
            "</expression></place>".into(),
        ),
        ("half-typed closing tag", "</expression>", "</expr".into()),
        ("a second attribute", a, a.replace("/>", " name=\"z\"/>")),
        (
            "a second root",
            "</net>\n</defun>\n",
            "</net>\n</defun>\n<defun/>".into(),
        ),
    ];
    let mut out = String::new();
    for (what, from, to) in cases {
        assert!(TOLERANT_NET.contains(from), "{what}");
        let src = TOLERANT_NET.replacen(from, to, 1);
        out.push_str(&format!("{what}: {}", survivors(&src)));
    }
    expect![[r#"
        half-typed tag: defun n; places a b; transition t x y (2 connections); transition u x (1 connections)
          xml_syntax `<tran`: malformed XML: a start tag without `>` in `<tran`
        half-typed attribute: defun n; places a b; transition t x y (2 connections); transition u x (1 connections)
          xml_syntax `<place name="c" type=`: malformed XML: an attribute without a quoted value in `<place`
        unclosed attribute value: defun n; places a b; transition t x y (2 connections); transition u x (1 connections)
          xml_syntax `<place name="c" type="long/>`: malformed XML: an unclosed attribute value in `<place`
        missing `>`: defun n; places a b c; transition t x y (2 connections); transition u x (1 connections)
          xml_syntax `<place name="c" type="long"`: malformed XML: a start tag without `>` in `<place`
        missing `/>`: defun n; places a b c; transition t x y (2 connections); transition u x (1 connections)
          xml_syntax `<place name="c" type="long"/`: malformed XML: a `/` without `>` in `<place`
        a transition being typed: defun n; places a b; transition t x y (2 connections); transition u x (1 connections); transition v (0 connections)
          xml_syntax `<transition name="v"`: malformed XML: a start tag without `>` in `<transition`
        an unclosed CDATA section: defun n; places a b; transition t x y (2 connections); transition u x (1 connections)
          xml_syntax `<![CDATA[`: malformed XML: an unclosed CDATA section
        an unclosed comment: defun n; places a b; transition t x y (2 connections); transition u x (1 connections)
          xml_syntax `<!-- about b`: malformed XML: an unclosed comment
        a parent's missing `>`: defun n; places a b; transition t x y (2 connections); transition u x (1 connections)
          xml_syntax `<transition name="t"`: malformed XML: a start tag without `>` in `<transition`
        a transition not closed yet: defun n; places a b; transition t x y (2 connections); transition v (0 connections); transition u x (1 connections)
          xml_syntax `transition`: malformed XML: `<transition>` is not closed before the next `<transition>`
        stray `<`: defun n; places a b; transition t x y (2 connections); transition u x (1 connections)
          xml_syntax `<`: malformed XML: a stray `<` (write `&lt;`)
        stray `&`: defun n; places a b; transition t x y (2 connections); transition u x (1 connections)
          xml_syntax `&`: malformed XML: a stray `&` (write `&amp;`)
        stray `<` between elements: defun n; places a b; transition t x y (2 connections); transition u x (1 connections)
          xml_syntax `<`: malformed XML: a stray `<` (write `&lt;`)
          unexpected-element `<`: unexpected text in `net`
        unclosed elements at the end: defun n; places a b; transition t x y (2 connections); transition u x (1 connections); transition v (0 connections)
          xml_syntax `transition`: malformed XML: `<transition>` is never closed
          xml_syntax `net`: malformed XML: `<net>` is never closed
          xml_syntax `defun`: malformed XML: `<defun>` is never closed
        a closing tag of an outer element: defun n; places a b c; transition t x y (2 connections); transition u x (1 connections)
          xml_syntax `place`: malformed XML: `<place>` is not closed before `</net>`
        a closing tag of no open element: defun n; places a b; transition t x y (2 connections); transition u x (1 connections)
          xml_syntax `</place>`: malformed XML: a closing tag `</place>` in `<defun>`, which it does not close
        half-typed closing tag: defun n; places a b; transition t x y (2 connections); transition u x (1 connections)
          xml_syntax `</expr`: malformed XML: an unfinished closing tag `</expr`
        a second attribute: defun n; places a b; transition t x y (2 connections); transition u x (1 connections)
          xml_syntax `name="z"`: malformed XML: a second attribute `name`
        a second root: defun n; places a b; transition t x y (2 connections); transition u x (1 connections)
          xml_syntax `<defun/>`: malformed XML: content after the root element
    "#]]
    .assert_eq(&out);
    // The undamaged net, for comparison: no diagnostic.
    expect![[r#"
        defun n; places a b; transition t x y (2 connections); transition u x (1 connections)
    "#]]
    .assert_eq(&survivors(TOLERANT_NET));
}
/// Every corpus file, parsed: (path, text, its places and transitions).
fn corpus_nets() -> Vec<(String, String, (usize, usize))> {
    corpus_files()
        .into_iter()
        .filter_map(|(path, text)| {
            let (file, diags) = parse_file(FileId(0), &text);
            assert!(diags.iter().all(|d| d.code != "xml_syntax"), "{path}");
            let counts = net_counts(&file)?;
            Some((path, text, counts))
        })
        .collect()
}

/// The number of places and transitions of a defun root's net.
fn net_counts(file: &File) -> Option<(usize, usize)> {
    match &file.root {
        Some(Root::Defun(d)) => match &d.body {
            Some(DefunBody::Net(n)) => Some((n.places.len(), n.transitions.len())),
            _ => None,
        },
        _ => None,
    }
}

#[test]
fn deleting_a_markup_character_keeps_a_root() {
    if pnet_tests::corpus_absent() {
        return;
    }
    // Every 11th byte of every corpus net, if it is markup (`<`, `>`, `"`, `/`, `=`).
    let (mut broken, mut rooted) = (0, 0);
    let mut lost = Vec::new();
    for (path, text, _) in corpus_nets() {
        for at in (0..text.len()).step_by(11) {
            if !matches!(text.as_bytes()[at], b'<' | b'>' | b'"' | b'/' | b'=') {
                continue;
            }
            let damaged = format!("{}{}", &text[..at], &text[at + 1..]);
            let (file, diags) = parse_file(FileId(0), &damaged);
            if diags.iter().any(|d| d.code == "xml_syntax") {
                broken += 1;
                if file.root.is_some() {
                    rooted += 1;
                } else {
                    lost.push(format!("{path}@{at}"));
                }
            }
        }
    }
    assert!(broken > 1000, "{broken}");
    assert_eq!(rooted, broken, "{lost:?}");
}

#[test]
fn a_half_typed_tag_before_any_place_or_transition_keeps_them_all() {
    if pnet_tests::corpus_absent() {
        return;
    }
    let typed = [
        "<tran",
        "<place name=\"x\" type=",
        "<place name=\"x",
        "<connect-in port=\"p\" place=\"",
        "</",
        "<",
        "&",
    ];
    let mut n = 0;
    for (path, text, counts) in corpus_nets() {
        let lines: Vec<usize> = text
            .match_indices('\n')
            .map(|(i, _)| i + 1)
            .filter(|&i| {
                let rest = text[i..].trim_start();
                rest.starts_with("<place") || rest.starts_with("<transition")
            })
            .collect();
        for (k, at) in lines.into_iter().enumerate() {
            let t = typed[k % typed.len()];
            let damaged = format!("{}{t}\n{}", &text[..at], &text[at..]);
            let (file, diags) = parse_file(FileId(0), &damaged);
            let xml: Vec<_> = diags.iter().filter(|d| d.code == "xml_syntax").collect();
            assert_eq!(xml.len(), 1, "{path}: `{t}` at {at}: {diags:?}");
            let s = xml[0].primary_span().expect("a span");
            assert!(
                s.start as usize >= at && s.end as usize <= at + t.len(),
                "{path}: `{t}` at {at}: {s:?}"
            );
            assert_eq!(
                net_counts(&file),
                Some(counts),
                "{path}: `{t}` at {at}: {diags:?}"
            );
            n += 1;
        }
    }
    assert!(n > 100, "{n}");
}

#[test]
fn texts_of_repaired_files_map_back_to_the_file() {
    // An unclosed CDATA section, a stray `<` and `&`, a broken tag inside an expression: the
    // expression text is what was typed (the broken tag left out), mapped to the file.
    for (from, to, text) in [
        (
            "${y} := ${x} + 1",
            "<![CDATA[${y} := ${x} < 1",
            "${y} := ${x} < 1",
        ),
        ("${x} + 1", "${x} < 1 & 2", "${y} := ${x} < 1 & 2"),
        ("${x} + 1", "${x} <a b=\"1 + 1", "${y} := ${x} "),
    ] {
        let src = TOLERANT_NET.replacen(from, to, 1);
        let (file, diags) = parse_file(FileId(0), &src);
        assert!(diags.iter().all(|d| d.code == "xml_syntax"), "{diags:?}");
        let all = texts(&file);
        let (_, t) = all
            .iter()
            .find(|(_, t)| t.text.starts_with("${y} := "))
            .expect("the expression");
        assert_eq!(t.text, text);
        for (_, t) in &all {
            check_mapping(to, &src, t);
        }
    }
}

/// `parse_by_items` gives the tree and diagnostics of `parse_file`, or `None`.
fn by_items_agrees(text: &str) -> bool {
    let f = FileId(3);
    let Some((tree, mut diags)) = items::parse_by_items(f, text, |t| items::parse_transition(f, t))
    else {
        return false;
    };
    let (whole, mut want) = parse_file(f, text);
    assert_eq!(tree, whole, "tree of\n{text}");
    let key = |d: &Diagnostic| (d.primary_span().map(|s| s.start), d.code, d.message.clone());
    diags.sort_by_key(key);
    want.sort_by_key(key);
    assert_eq!(diags, want, "diagnostics of\n{text}");
    true
}

const ITEMS_NET: &str = r#"<?xml version="1.0"?>
<!-- a <transition> in a comment -->
<defun name="n">
  <in name="i" type="long" place="a"/>
  <net>
    <struct name="s"><field name="f" type="long"/></struct>
    <place name="a" type="long"><token><value>1L</value></token></place>
    <place name="b" type="long"/>
    <transition name="t1" priority="2">
      <defun>
        <in name="x" type="long"/><out name="y" type="long"/>
        <expression><![CDATA[${y} := ${x} + 1L; /* </transition> */]]></expression>
        <condition>${x} &lt; 10L</condition>
      </defun>
      <connect-in port="x" place="a"/>
      <connect-out port="y" place="b"/>
      <properties name="p"><property key="k">v</property></properties>
    </transition>
    <!-- between -->
    <transition name="t2"/>
    <transition name='t3' inline="maybe" bogus="1">
      <defun><net><place name="c" type="long"/><transition name="inner"><use name="u"/></transition></net></defun>
      <place-map virtual="c" real="a"/>
      stray text
      <connect-read port="x" place="a"/>
    </transition>
    <transition>
      <include-function href="f.xpnet"/>
    </transition>
  </net>
</defun>
"#;

#[test]
fn parse_by_items_equals_parse_file() {
    assert!(by_items_agrees(ITEMS_NET));
    let ranges = items::transition_ranges(ITEMS_NET).expect("cut");
    assert_eq!(ranges.len(), 4);
    assert_eq!(items::item_ranges(ITEMS_NET).expect("cut").places.len(), 2);
    // not cut: no net, two roots, a DTD, a prefixed element, unbalanced tags
    for text in [
        "<defun><expression>1L</expression></defun>",
        "<defun><net><transition name=\"t\"/></net></defun><defun/>",
        "<!DOCTYPE x><defun><net><transition name=\"t\"/></net></defun>",
        "<defun xmlns:g=\"u\"><net><g:transition name=\"t\"/></net></defun>",
        "<defun><net><transition name=\"t\"></net></defun>",
    ] {
        assert!(!by_items_agrees(text), "{text}");
    }
    // every one-byte deletion: the same as a whole parse, or not cut
    let mut cut = 0;
    for (i, _) in ITEMS_NET.char_indices() {
        let mut t = ITEMS_NET.to_string();
        t.remove(i);
        cut += usize::from(by_items_agrees(&t));
    }
    assert!(
        cut > ITEMS_NET.len() / 2,
        "{cut} of {} cut",
        ITEMS_NET.len()
    );
}

/// With only blanks between the items, the skeleton is parsed without them (`compact`):
/// the same as a whole parse, also after every one-byte deletion.
#[test]
fn parse_by_items_equals_parse_file_when_the_skeleton_is_compacted() {
    let text = ITEMS_NET.replace("<!-- between -->", "");
    let r = items::item_ranges(&text).expect("cut");
    let mut all: Vec<_> = r.places.iter().chain(&r.transitions).cloned().collect();
    all.sort_by_key(|r| r.start);
    assert!(items::compact(FileId(3), &text, &all).is_some());
    assert!(by_items_agrees(&text));
    let mut cut = 0;
    for (i, _) in text.char_indices() {
        let mut t = text.clone();
        t.remove(i);
        cut += usize::from(by_items_agrees(&t));
    }
    assert!(cut > text.len() / 2, "{cut} of {} cut", text.len());
}

#[test]
fn parse_by_items_equals_parse_file_on_the_corpus() {
    if pnet_tests::corpus_absent() {
        return;
    }
    let cut = corpus_files()
        .iter()
        .filter(|(_, text)| by_items_agrees(text))
        .count();
    assert!(cut > 50, "{cut} corpus files cut into items");
}
