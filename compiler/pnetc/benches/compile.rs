//! Compile-time benchmark: a generated net with N places and N transitions, each transition
//! with one expression and one condition, compiled N = 1,000, 10,000, 100,000.
//! Prints wall time and peak heap per size (a counting global allocator).
//!
//! Run: `cargo bench -p pnetc --bench compile` (add sizes as arguments to override).

use std::alloc::{GlobalAlloc, Layout, System};
use std::fmt::Write as _;
use std::path::Path;
use std::sync::atomic::{AtomicUsize, Ordering};
use std::time::Instant;

struct Counting;

static CURRENT: AtomicUsize = AtomicUsize::new(0);
static PEAK: AtomicUsize = AtomicUsize::new(0);

unsafe impl GlobalAlloc for Counting {
    unsafe fn alloc(&self, layout: Layout) -> *mut u8 {
        // SAFETY: forwarded to the system allocator with the caller's layout.
        let p = unsafe { System.alloc(layout) };
        if !p.is_null() {
            let now = CURRENT.fetch_add(layout.size(), Ordering::Relaxed) + layout.size();
            PEAK.fetch_max(now, Ordering::Relaxed);
        }
        p
    }

    unsafe fn dealloc(&self, ptr: *mut u8, layout: Layout) {
        // SAFETY: forwarded to the system allocator; `ptr` came from `alloc` with `layout`.
        unsafe { System.dealloc(ptr, layout) };
        CURRENT.fetch_sub(layout.size(), Ordering::Relaxed);
    }
}

#[global_allocator]
static ALLOC: Counting = Counting;

/// A chain p0 -> t0 -> p1 -> ... -> pN: each transition decrements a long under a condition.
fn generate(n: usize) -> String {
    let mut s = String::with_capacity(n * 400);
    s.push_str("<defun name=\"chain\">\n  <in name=\"x\" type=\"long\" place=\"p0\"/>\n");
    let _ = writeln!(
        s,
        "  <out name=\"y\" type=\"long\" place=\"p{n}\"/>\n  <net>"
    );
    for i in 0..=n {
        let _ = writeln!(s, "    <place name=\"p{i}\" type=\"long\"/>");
    }
    for i in 0..n {
        let _ = writeln!(
            s,
            "    <transition name=\"t{i}\">\n      <defun>\n        <in name=\"a\" type=\"long\"/>\n        <out name=\"b\" type=\"long\"/>\n        <expression>${{b}} := ${{a}} - 1L</expression>\n        <condition>${{a}} :gt: {i}L</condition>\n      </defun>\n      <connect-in port=\"a\" place=\"p{i}\"/>\n      <connect-out port=\"b\" place=\"p{}\"/>\n    </transition>",
            i + 1
        );
    }
    s.push_str("  </net>\n</defun>\n");
    s
}

fn main() {
    let sizes: Vec<usize> = {
        let args: Vec<usize> = std::env::args()
            .skip(1)
            .filter_map(|a| a.parse().ok())
            .collect();
        if args.is_empty() {
            vec![1_000, 10_000, 100_000]
        } else {
            args
        }
    };
    println!(
        "{:>10} {:>12} {:>12} {:>14} {:>12}",
        "transitions", "source KiB", "compile ms", "peak heap MiB", "bytes/trans"
    );
    for n in sizes {
        let text = generate(n);
        let options = pnet_sema::Options::default();
        let base = CURRENT.load(Ordering::Relaxed);
        PEAK.store(base, Ordering::Relaxed);
        let t = Instant::now();
        let out = pnet_sema::compile_source(Path::new("chain.xpnet"), &text, &options);
        let ms = t.elapsed().as_secs_f64() * 1000.0;
        let peak = PEAK.load(Ordering::Relaxed) - base;
        assert!(
            out.bundle.is_some(),
            "generated net did not compile: {:?}",
            out.diagnostics.first()
        );
        drop(out);
        println!(
            "{:>10} {:>12} {:>12.1} {:>14.1} {:>12}",
            n,
            text.len() / 1024,
            ms,
            peak as f64 / (1024.0 * 1024.0),
            peak / n
        );
    }
}
