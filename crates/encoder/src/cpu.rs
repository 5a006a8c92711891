//! Which of the processor's vector extensions the kernels use: detected
//! once per process, every one of them set aside when the environment
//! says `TRELLIS_CPU=portable`.
//!
//! Every kernel with a wide path (the packed and int8 dense layers, the
//! encoder's AVX2 build, the byte scans under the segmenter) asks here,
//! so that one switch runs the portable code a processor without the
//! extensions runs. The test command runs the kernel and segmenter tests
//! both ways; without the switch, a machine with AVX-512 would never run
//! the portable code its tests are meant to hold to.

use std::sync::OnceLock;

/// The environment variable that forces the portable paths: `portable`
/// does; unset, or any other value, uses what the processor has.
pub const ENV: &str = "TRELLIS_CPU";

/// The extensions the kernels may use. Only [`Cpu::detected`] and
/// [`Cpu::PORTABLE`] make one, so a `Cpu` never claims an extension the
/// processor lacks: a kernel may rely on what it says.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct Cpu {
    avx2: bool,
    avx2_fma: bool,
    avx512f: bool,
    avx512bw: bool,
    avx512_vnni: bool,
}

impl Cpu {
    /// No extension: the portable paths everywhere.
    pub const PORTABLE: Cpu = Cpu {
        avx2: false,
        avx2_fma: false,
        avx512f: false,
        avx512bw: false,
        avx512_vnni: false,
    };

    /// What this processor has.
    pub fn detected() -> Cpu {
        #[cfg(target_arch = "x86_64")]
        {
            use std::arch::is_x86_feature_detected as has;
            Cpu {
                avx2: has!("avx2"),
                avx2_fma: has!("avx2") && has!("fma"),
                avx512f: has!("avx512f"),
                avx512bw: has!("avx512bw"),
                avx512_vnni: has!("avx512f") && has!("avx512vnni"),
            }
        }
        #[cfg(not(target_arch = "x86_64"))]
        {
            Cpu::PORTABLE
        }
    }

    /// AVX2 with fused multiply-add.
    pub fn avx2_fma(self) -> bool {
        self.avx2_fma
    }

    /// AVX2, with or without FMA.
    pub fn avx2(self) -> bool {
        self.avx2
    }

    /// AVX-512 Foundation.
    pub fn avx512f(self) -> bool {
        self.avx512f
    }

    /// AVX-512 byte and word instructions.
    pub fn avx512bw(self) -> bool {
        self.avx512bw
    }

    /// AVX-512 Foundation with its vector neural network instructions.
    pub fn avx512_vnni(self) -> bool {
        self.avx512_vnni
    }

    /// The widest path taken, for logs and benchmark reports.
    pub fn describe(self) -> &'static str {
        match self {
            c if c.avx512_vnni => "avx512 vnni",
            c if c.avx512f => "avx512",
            c if c.avx2_fma => "avx2 fma",
            _ => "portable",
        }
    }
}

/// The extensions this process's kernels use: [`Cpu::detected`], or
/// [`Cpu::PORTABLE`] under `TRELLIS_CPU=portable`. Read once.
pub fn cpu() -> Cpu {
    static CPU: OnceLock<Cpu> = OnceLock::new();
    *CPU.get_or_init(|| match std::env::var(ENV).as_deref() {
        Ok("portable") => Cpu::PORTABLE,
        _ => Cpu::detected(),
    })
}
