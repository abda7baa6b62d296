#![no_main]

libfuzzer_sys::fuzz_target!(|data: &[u8]| fuzz_targets::xpnet(data));
