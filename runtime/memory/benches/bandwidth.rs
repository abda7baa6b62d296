//! Memory transfer bandwidth: the machine's memcpy against a get between two workers on one
//! host (the peer's segment file mapped) and between two workers on different "hosts" (TCP
//! over loopback to the peer's memory server, running in its own threads).
//!
//! Run with `cargo bench -p pnet-memory` (or `--bench bandwidth -- --help`).

use std::net::TcpListener;
use std::path::PathBuf;
use std::sync::Arc;
use std::time::Instant;

use pnet_memory::{
    BufferSpec, Copy, LocalBuffers, MemoryTask, Peers, Segment, SegmentInfo, Server, run_gets,
};
use pnet_protocol::Secret;

const MIB: u64 = 1 << 20;
const USAGE: &str = "\
bandwidth: memory transfer bandwidth of the pnet memory layer

usage: cargo bench -p pnet-memory [-- OPTIONS]

Measures, for transfers of 1 MiB, 16 MiB and 256 MiB, the median bandwidth (GB/s, 10^9
bytes per second) of several runs of
  memcpy      copy_from_slice between two 256 MiB buffers,
  same host   a get from another worker's segment (its /dev/shm file mapped) into a
              module's local buffer,
  TCP         the same get from a worker on another host id (its memory server over
              loopback TCP).

options:
  --quick        1 MiB and 16 MiB only, fewer runs
  --dir DIR      where to create the two segments (default /dev/shm)
  -h, --help     this text
";

struct Options {
    quick: bool,
    dir: PathBuf,
}

fn options() -> Result<Options, String> {
    let mut o = Options {
        quick: false,
        dir: PathBuf::from("/dev/shm"),
    };
    let mut args = std::env::args().skip(1);
    while let Some(a) = args.next() {
        match a.as_str() {
            "-h" | "--help" => {
                print!("{USAGE}");
                std::process::exit(0);
            }
            "--quick" => o.quick = true,
            "--dir" => {
                o.dir = PathBuf::from(args.next().ok_or("--dir needs a directory")?);
            }
            // cargo bench passes `--bench`; filters are not supported and ignored
            "--bench" => {}
            other if other.starts_with('-') => return Err(format!("unknown option `{other}`")),
            _ => {}
        }
    }
    Ok(o)
}

/// Median GB/s of `runs` runs of `reps` repetitions of `f` moving `bytes` each.
fn measure(bytes: u64, reps: u32, runs: u32, mut f: impl FnMut()) -> f64 {
    f(); // warm up: page faults, connections
    let mut rates: Vec<f64> = (0..runs)
        .map(|_| {
            let t = Instant::now();
            for _ in 0..reps {
                f();
            }
            (bytes * u64::from(reps)) as f64 / t.elapsed().as_secs_f64() / 1e9
        })
        .collect();
    rates.sort_by(f64::total_cmp);
    rates[rates.len() / 2]
}

fn main() {
    let o = match options() {
        Ok(o) => o,
        Err(e) => {
            eprintln!("bandwidth: error: {e}\n\n{USAGE}");
            std::process::exit(2);
        }
    };
    if let Err(e) = run(&o) {
        eprintln!("bandwidth: error: {e}");
        std::process::exit(1);
    }
}

fn run(o: &Options) -> Result<(), String> {
    let sizes: &[u64] = if o.quick {
        &[MIB, 16 * MIB]
    } else {
        &[MIB, 16 * MIB, 256 * MIB]
    };
    let runs = if o.quick { 3 } else { 7 };
    let max = *sizes.iter().max().unwrap_or(&MIB);
    let secret = Secret::random().map_err(|e| e.to_string())?;
    let tag = std::process::id();
    let seg_a = Arc::new(
        Segment::create(&o.dir, &format!("pnet-bench-{tag}-a"), max).map_err(|e| e.to_string())?,
    );
    let seg_b = Arc::new(
        Segment::create(&o.dir, &format!("pnet-bench-{tag}-b"), max).map_err(|e| e.to_string())?,
    );
    let listener = TcpListener::bind("127.0.0.1:0").map_err(|e| e.to_string())?;
    let server =
        Server::start(seg_a.clone(), listener, secret.clone()).map_err(|e| e.to_string())?;
    let data: Vec<u8> = (0..max as usize)
        .map(|i| (i * 7 + (i >> 12)) as u8)
        .collect();
    seg_a.write_at(0, &data).map_err(|e| e.to_string())?;
    let info = |host: &str| SegmentInfo {
        id: 1,
        host: host.to_string(),
        shm_path: seg_a.path().to_string_lossy().into_owned(),
        server: server.addr().to_string(),
        size: max,
    };
    // worker B (segment 2) on host "h"; worker A on "h" (mapping) or "other" (TCP)
    let mut peers = Peers::new("h".into(), Some((2, seg_b.clone())), secret.clone());
    let mut src = vec![0u8; max as usize];
    src.copy_from_slice(&data);
    let mut dst = vec![0u8; max as usize];

    println!(
        "memory transfer bandwidth (GB/s = 10^9 bytes/s, median of {runs} runs; get = peer segment -> local buffer)"
    );
    println!(
        "{:>10} {:>8} {:>12} {:>20} {:>22}",
        "size", "reps", "memcpy", "same host (mmap)", "other host (TCP lo)"
    );
    for &size in sizes {
        let n = size as usize;
        let reps = ((1024 * MIB) / size).max(2) as u32;
        let tcp_reps = ((512 * MIB) / size).max(2) as u32;
        let memcpy = measure(size, reps, runs, || {
            dst[..n].copy_from_slice(&src[..n]);
            std::hint::black_box(&mut dst);
        });
        let mut bufs = LocalBuffers::allocate(
            &[BufferSpec {
                name: "local".into(),
                size,
                alignment: 64,
                read_only: false,
            }],
            size,
        )
        .map_err(|e| e.to_string())?;
        let mut rates = Vec::new();
        for host in ["h", "other"] {
            let task = MemoryTask {
                buffers: vec![],
                segments: vec![info(host)],
                gets: vec![Copy {
                    buffer: 0,
                    buffer_offset: 0,
                    segment: 1,
                    segment_offset: 0,
                    len: size,
                }],
                puts: vec![],
            };
            let mut failed = None;
            let r = measure(
                size,
                if host == "h" { reps } else { tcp_reps },
                runs,
                || {
                    if let Err(e) = run_gets(&task, &mut bufs, &mut peers) {
                        failed = Some(e);
                    }
                },
            );
            if let Some(e) = failed {
                return Err(e.to_string());
            }
            if bufs.bytes(0) != &data[..n] {
                return Err(format!("the {host} get of {size} bytes copied wrong bytes"));
            }
            bufs.bytes_mut(0).fill(0);
            rates.push(r);
        }
        println!(
            "{:>6} MiB {:>8} {:>12.2} {:>20.2} {:>22.2}",
            size / MIB,
            reps,
            memcpy,
            rates[0],
            rates[1]
        );
    }
    server.stop();
    Ok(())
}
