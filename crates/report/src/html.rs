//! HTML building blocks of the report: escaping, the page shell with its inline
//! stylesheet, and tables. Pages are complete documents that open from disk offline.

use std::fmt::Write;

/// Escapes text for HTML element content and attribute values.
pub fn escape(s: &str) -> String {
    let mut out = String::with_capacity(s.len());
    for ch in s.chars() {
        match ch {
            '&' => out.push_str("&amp;"),
            '<' => out.push_str("&lt;"),
            '>' => out.push_str("&gt;"),
            '"' => out.push_str("&quot;"),
            '\'' => out.push_str("&#39;"),
            c => out.push(c),
        }
    }
    out
}

const STYLE: &str = "
body{font-family:system-ui,-apple-system,'Segoe UI',sans-serif;margin:0;color:#1d2330;background:#f6f7f9}
header{background:#1d3557;color:#fff;padding:14px 28px}header a{color:#cfe3ff}
main{padding:18px 28px}
h1{font-size:22px;margin:0}h2{font-size:18px;margin:26px 0 8px}h3{font-size:15px;margin:18px 0 6px}
.charts{display:grid;grid-template-columns:repeat(auto-fill,minmax(min(100%,600px),1fr));gap:14px}.chart{background:#fff;border:1px solid #dde1e7;border-radius:6px;padding:6px;min-width:0}.chart>svg{display:block;width:100%;height:auto}
.answer{display:flex;flex-wrap:wrap;gap:10px 28px;align-items:flex-start}.answer>.verdicts{flex:3 1 720px;min-width:0;overflow-x:auto}.answer>.provenance{flex:1 1 360px;min-width:0;overflow-x:auto}
.verdicts td:first-child{white-space:nowrap}.verdicts>table:first-of-type td:last-child,.verdicts>table:first-of-type th:last-child{text-align:left;min-width:16em}
table{border-collapse:collapse;background:#fff;font-size:13px;margin:6px 0 14px}
th,td{border:1px solid #dde1e7;padding:4px 8px;text-align:right;vertical-align:top}th{background:#eef1f5}
td.l,th.l{text-align:left}pre{background:#fff;border:1px solid #dde1e7;padding:10px;overflow:auto;font-size:12px}
.faster{color:#11772d;font-weight:600}.slower{color:#b3261e;font-weight:600}.same{color:#555}
.legend{list-style:none;padding:0 8px;margin:4px 0;font-size:12px;max-width:720px}.legend li{display:inline-block;margin:2px 12px 2px 0}
.swatch{display:inline-block}
.hints{margin:4px 0 14px;padding-left:22px;max-width:900px;font-size:14px;line-height:1.45}.hints li{margin:3px 0}
.flame{display:block;width:100%;background:#fff;border:1px solid #dde1e7}.warn{color:#8a5300}.muted{color:#667}.note{font-size:11px;color:#667;margin:2px 8px;max-width:700px}
.legend svg.swatch{width:28px;height:12px;margin:0 6px 0 0;vertical-align:middle}
svg text{font-family:sans-serif}svg .k{fill:none;stroke:#000;stroke-width:1}svg .g{stroke:#e4e4e4;stroke-width:1}nav.contents ul{list-style:none;padding:0;margin:8px 0;font-size:13px}nav.contents li{display:inline-block;margin:0 14px 4px 0}
";

/// Wraps `body` in a complete HTML document titled `title`; `nav` is a breadcrumb line.
pub fn page(title: &str, nav: &str, body: &str) -> String {
    format!(
        "<!DOCTYPE html>\n<html lang=\"en\"><head><meta charset=\"utf-8\">\
         <meta name=\"viewport\" content=\"width=device-width, initial-scale=1\">\
         <title>{t}</title><style>{STYLE}</style></head>\n<body><header><h1>{t}</h1><div>{nav}</div></header>\n<main>\n{body}\n</main></body></html>\n",
        t = escape(title)
    )
}

/// `body` with an anchor on each of its section headings (`<h2>…</h2>`) and, before
/// them, a list of links to those sections: a long page can be read from its top.
pub fn with_contents(body: &str) -> String {
    let mut out = String::with_capacity(body.len() + 1024);
    let mut links = String::new();
    let mut rest = body;
    let mut k = 0;
    while let Some(start) = rest.find("<h2>") {
        let Some(len) = rest[start..].find("</h2>") else {
            break;
        };
        let title = &rest[start + 4..start + len];
        k += 1;
        let _ = write!(links, "<li><a href=\"#s{k}\">{title}</a></li>");
        out.push_str(&rest[..start]);
        let _ = write!(out, "<h2 id=\"s{k}\">{title}</h2>");
        rest = &rest[start + len + 5..];
    }
    out.push_str(rest);
    if k < 3 {
        return body.to_string();
    }
    format!("<nav class=\"contents\"><ul>{links}</ul></nav>{out}")
}

/// A table; `header` cells and `rows` cells are already-escaped HTML. The first column
/// is left-aligned.
pub fn table(header: &[String], rows: &[Vec<String>]) -> String {
    let mut s = String::from("<table><thead><tr>");
    for (i, h) in header.iter().enumerate() {
        let class = if i == 0 { " class=\"l\"" } else { "" };
        let _ = write!(s, "<th{class}>{h}</th>");
    }
    s.push_str("</tr></thead><tbody>");
    for row in rows {
        s.push_str("<tr>");
        for (i, c) in row.iter().enumerate() {
            let class = if i == 0 { " class=\"l\"" } else { "" };
            let _ = write!(s, "<td{class}>{c}</td>");
        }
        s.push_str("</tr>");
    }
    s.push_str("</tbody></table>");
    s
}

/// A table of text to read: every column left-aligned; cells are already-escaped HTML.
pub fn text_table(header: &[String], rows: &[Vec<String>]) -> String {
    table(header, rows)
        .replace("<th>", "<th class=\"l\">")
        .replace("<td>", "<td class=\"l\">")
}

/// A two-column key/value table of plain text, both columns left-aligned (values are
/// text to read, not numbers to compare down a column).
pub fn kv_table(rows: &[(String, String)]) -> String {
    let mut s = String::from(
        "<table><thead><tr><th class=\"l\">name</th><th class=\"l\">value</th></tr></thead><tbody>",
    );
    for (k, v) in rows {
        let _ = write!(
            s,
            "<tr><td class=\"l\">{}</td><td class=\"l\">{}</td></tr>",
            escape(k),
            escape(v)
        );
    }
    s.push_str("</tbody></table>");
    s
}

/// A list of sentences to read, left-aligned, one per item.
pub fn text_list(class: &str, items: &[String]) -> String {
    let mut s = format!("<ul class=\"{class}\">");
    for item in items {
        let _ = write!(s, "<li>{}</li>", escape(item));
    }
    s.push_str("</ul>");
    s
}

/// Formats a number for tables: thousands kept readable, NaN shown as a dash.
pub fn num(v: f64, decimals: usize) -> String {
    if v.is_finite() {
        format!("{v:.decimals$}")
    } else {
        "–".into()
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn escapes_markup() {
        assert_eq!(
            escape("<a href=\"x\">&'"),
            "&lt;a href=&quot;x&quot;&gt;&amp;&#39;"
        );
    }

    #[test]
    fn page_is_a_full_document() {
        let p = page("T<1>", "nav", "<p>x</p>");
        assert!(p.starts_with("<!DOCTYPE html>"));
        assert!(p.contains("<title>T&lt;1&gt;</title>"));
        assert!(p.ends_with("</html>\n"));
    }

    #[test]
    fn a_page_with_sections_lists_them_first() {
        let body = "<p>x</p><h2>One</h2>a<h2>Two &amp; more</h2>b<h2>Three</h2>c";
        let out = with_contents(body);
        assert!(out.starts_with("<nav class=\"contents\"><ul><li><a href=\"#s1\">One</a></li>"));
        assert!(out.contains("<li><a href=\"#s2\">Two &amp; more</a></li>"));
        assert!(out.contains("<h2 id=\"s3\">Three</h2>c"));
        assert!(out.ends_with("<h2 id=\"s3\">Three</h2>c"));
        // Two sections need no list.
        assert_eq!(
            with_contents("<h2>a</h2><h2>b</h2>"),
            "<h2>a</h2><h2>b</h2>"
        );
    }
}
