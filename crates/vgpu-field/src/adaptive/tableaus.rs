//! Embedded explicit Runge–Kutta pairs as data: [`ErkTableau`] (Butcher
//! coefficients, embedded weights, FSAL flag) with its [`DenseTableau`]
//! (continuous extension), and the four built-in pairs [`tsit5`], [`dp5`],
//! [`bs3`] and [`crate::adaptive::vern7`]. One Runge–Kutta core
//! ([`crate::adaptive::AdaptiveEnsemble`]) runs them all, as in diffsol.
//!
//! **Conventions.** Stages are numbered from 0. `a[i][j]` is zero for `j ≥ i`.
//! The propagated solution is `y₁ = y₀ + h·Σ b_i k_i` (order [`ErkTableau::order`]),
//! the embedded one `ŷ₁ = y₀ + h·Σ b̂_i k_i` (order [`ErkTableau::embedded_order`]);
//! the error estimate is `y₁ − ŷ₁ = h·Σ (b_i − b̂_i) k_i`. A FSAL pair's last
//! stage is `f(t₀ + h, y₁)` (`c = 1`, last row of `a` = `b`).
//!
//! **Dense output.** `y(t₀ + θh) = y₀ + h·Σ_i w_i(θ) k_i` with polynomial
//! weights `w_i(θ) = Σ_m W[i][m]·θ^(m+1)` over the *extended* stages: the
//! method's own stages, then `f(t₀ + h, y₁)` as an extra stage if the pair is
//! not FSAL, then any further stages the interpolant needs (computed lazily,
//! only on steps that hold a save time).

use crate::error::FieldError;
use crate::tableau::Tableau;

/// How a method's dense output was built.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum DenseKind {
    /// The method's own continuous extension (published with the pair).
    Native,
    /// The cubic Hermite interpolant through `y₀, y₁, f(t₀, y₀), f(t₁, y₁)`
    /// (order 3), written as stage weights.
    Hermite,
}

/// A continuous extension over the extended stages (see the module docs).
#[derive(Debug, Clone, PartialEq)]
pub struct DenseTableau {
    /// How the interpolant was built.
    pub kind: DenseKind,
    /// Its order (uniform in `θ ∈ [0, 1]`).
    pub order: u32,
    /// Nodes of the extra stages after the method's own (and after
    /// `f(t₁, y₁)` for a pair that is not FSAL).
    pub extra_c: Vec<f64>,
    /// Rows of `a` of those extra stages, each over all earlier extended
    /// stages (extra stage `e` has `stages + fsal_gap + e` entries).
    pub extra_a: Vec<Vec<f64>>,
    /// `W[i][m]`: the coefficient of `θ^(m+1)` in the weight of extended stage `i`.
    pub weights: Vec<Vec<f64>>,
}

/// An embedded explicit Runge–Kutta pair with `S` stages, as data.
#[derive(Debug, Clone, PartialEq)]
pub struct ErkTableau<const S: usize> {
    /// The method's name (`"tsit5"`, …).
    pub name: &'static str,
    /// Order of the propagated solution.
    pub order: u32,
    /// Order of the embedded solution.
    pub embedded_order: u32,
    /// Nodes.
    pub c: [f64; S],
    /// Coefficients (strictly lower triangular).
    pub a: [[f64; S]; S],
    /// Weights of the propagated solution.
    pub b: [f64; S],
    /// Weights of the embedded solution.
    pub b_hat: [f64; S],
    /// First same as last: the last stage is `f(t₀ + h, y₁)` and becomes the
    /// next step's first.
    pub fsal: bool,
    /// The continuous extension.
    pub dense: DenseTableau,
    /// Where the coefficients come from.
    pub source: &'static str,
}

impl<const S: usize> ErkTableau<S> {
    /// Error weights `b − b̂` (computed in `f64`).
    pub fn b_tilde(&self) -> [f64; S] {
        std::array::from_fn(|i| self.b[i] - self.b_hat[i])
    }

    /// Index of `f(t₀ + h, y₁)` among the extended stages: the last stage of
    /// a FSAL pair, otherwise the first extended stage after the method's own.
    pub fn f1_index(&self) -> usize {
        if self.fsal {
            S - 1
        } else {
            S
        }
    }

    /// Number of extended stages (see the module docs).
    pub fn extended_stages(&self) -> usize {
        self.f1_index() + 1 + self.dense.extra_c.len()
    }

    /// The extended tableau's rows of `a` (each padded to its index) and
    /// nodes: the method's stages, `f(t₁, y₁)` (row `b`, node 1) for a pair
    /// that is not FSAL, then the interpolant's extra stages.
    pub fn extended(&self) -> (Vec<Vec<f64>>, Vec<f64>) {
        let mut a: Vec<Vec<f64>> = (0..S).map(|i| self.a[i][..i].to_vec()).collect();
        let mut c = self.c.to_vec();
        if !self.fsal {
            a.push(self.b.to_vec());
            c.push(1.0);
        }
        for (row, ci) in self.dense.extra_a.iter().zip(&self.dense.extra_c) {
            let mut r = row.clone();
            r.resize(a.len(), 0.0);
            a.push(r);
            c.push(*ci);
        }
        (a, c)
    }

    /// The dense-output weights `w_i(θ)` of every extended stage.
    pub fn dense_weights(&self, theta: f64) -> Vec<f64> {
        self.dense
            .weights
            .iter()
            .map(|w| w.iter().rev().fold(0.0, |acc, &r| (acc + r) * theta))
            .collect()
    }

    /// The pair as the fixed-step executor's [`Tableau`] (weights `b`, with
    /// `b̂` as its embedded row): the same coefficients run through
    /// [`crate::Launch`] and [`crate::Stepper`].
    ///
    /// # Errors
    /// [`FieldError::BadTableau`] if the data fail [`Tableau::new`]'s checks.
    pub fn to_tableau(&self) -> Result<Tableau, FieldError> {
        self.tableau_with(&self.b, self.order)?
            .with_embedded(self.b_hat.to_vec(), self.embedded_order)
    }

    /// The embedded method alone (weights `b̂`) as a [`Tableau`], to measure
    /// its order.
    ///
    /// # Errors
    /// [`FieldError::BadTableau`] if the data fail [`Tableau::new`]'s checks.
    pub fn embedded_tableau(&self) -> Result<Tableau, FieldError> {
        self.tableau_with(&self.b_hat, self.embedded_order)
    }

    fn tableau_with(&self, w: &[f64; S], order: u32) -> Result<Tableau, FieldError> {
        Tableau::new(
            self.name,
            order,
            (0..S).map(|i| self.a[i][..i].to_vec()).collect(),
            w.to_vec(),
            self.c.to_vec(),
        )
    }
}

impl DenseTableau {
    /// The cubic Hermite interpolant (order 3) of a pair with weights `b`,
    /// `f(t₁, y₁)` at extended stage `f1` (`S − 1` for a FSAL pair, `S`
    /// otherwise), no extra stages: the fallback dense output of any pair.
    pub fn hermite(b: &[f64], f1: usize) -> Self {
        DenseTableau {
            kind: DenseKind::Hermite,
            order: 3,
            extra_c: vec![],
            extra_a: vec![],
            weights: hermite_weights(b, f1, f1 + 1),
        }
    }
}

/// Hermite weights over `n_ext` extended stages: `w_i(θ) = b_i(3θ² − 2θ³) +
/// [i = 0](θ − 2θ² + θ³) + [i = f1](θ³ − θ²)`, from
/// `y(θ) = y₀ + (3θ² − 2θ³)(y₁ − y₀) + θ(θ−1)²·h f₀ + θ²(θ−1)·h f₁`.
fn hermite_weights(b: &[f64], f1: usize, n_ext: usize) -> Vec<Vec<f64>> {
    (0..n_ext)
        .map(|i| {
            let bi = b.get(i).copied().unwrap_or(0.0);
            let d0 = if i == 0 { 1.0 } else { 0.0 };
            let d1 = if i == f1 { 1.0 } else { 0.0 };
            vec![d0, 3.0 * bi - 2.0 * d0 - d1, -2.0 * bi + d0 + d1]
        })
        .collect()
}

/// Tsitouras' 5(4) pair, FSAL, 7 stages, with its free fourth-order interpolant.
///
/// Source: Ch. Tsitouras, "Runge–Kutta pairs of order 5(4) satisfying only the
/// first column simplifying assumption", Comput. Math. Appl. 62 (2011) 770–775;
/// digits as in SciML/OrdinaryDiffEq.jl `src/tableaus/low_order_rk_tableaus.jl`
/// (`Tsit5ConstantCache`, `Tsit5Interp`, high-precision variants).
#[allow(clippy::excessive_precision)]
pub fn tsit5() -> ErkTableau<7> {
    let b = [
        0.096_460_766_818_065_229_518_167_313_165_128_763_337_119_952_381_58,
        0.01,
        0.479_889_650_414_499_574_775_249_532_290_596_519_913_040_462_199_03,
        1.379_008_574_103_741_893_192_274_821_856_872_770_756_462_643_091_36,
        -3.290_069_515_436_080_679_901_047_585_711_363_850_115_683_290_894_94,
        2.324_710_524_099_773_982_415_355_918_398_765_796_109_060_233_222_96,
        0.0,
    ];
    let z = 0.0;
    let a = [
        [z; 7],
        [0.161, z, z, z, z, z, z],
        [
            -0.008_480_655_492_356_988_544_426_874_250_230_774_675_121_177_393_430,
            0.335_480_655_492_356_988_544_426_874_250_230_774_675_121_177_393_43,
            z,
            z,
            z,
            z,
            z,
        ],
        [
            2.897_153_057_105_493_432_130_432_594_192_938_764_924_887_287_701_87,
            -6.359_448_489_975_074_843_148_159_912_383_825_625_952_700_647_415_63,
            4.362_295_432_869_581_411_017_727_318_190_886_861_027_813_359_713_76,
            z,
            z,
            z,
            z,
        ],
        [
            5.325_864_828_439_256_604_428_877_920_840_511_317_836_476_253_097_04,
            -11.748_883_564_062_827_877_747_170_339_785_772_961_887_441_782_598_6,
            7.495_539_342_889_836_208_304_604_784_564_358_155_658_679_161_518_19,
            -0.092_495_066_361_755_249_256_502_079_332_071_916_113_499_834_060_295,
            z,
            z,
            z,
        ],
        [
            5.861_455_442_946_420_028_659_251_486_982_647_890_394_337_666_164_81,
            -12.920_969_317_847_109_291_706_118_681_783_359_395_417_807_519_557_4,
            8.159_367_898_576_158_643_180_400_794_539_253_485_181_918_321_135_05,
            -0.071_584_973_281_400_997_224_530_542_525_829_738_691_272_131_473_635,
            -0.028_269_050_394_068_382_909_003_057_212_712_241_467_176_336_268_798,
            z,
            z,
        ],
        [b[0], b[1], b[2], b[3], b[4], b[5], z],
    ];
    let b_hat = [
        0.094_680_755_765_839_458_074_788_762_557_589_228_561_175_273_577_246_31,
        0.009_183_565_540_343_253_096_776_363_936_645_313_759_813_746_240_984_095,
        0.487_770_528_424_761_570_785_564_259_963_122_824_151_669_195_976_136_38,
        1.234_297_566_930_478_985_655_109_673_884_237_654_035_539_930_748_19,
        -2.707_712_349_983_525_454_881_109_975_059_321_670_689_605_166_938_2,
        1.866_628_418_170_587_035_753_719_399_566_211_498_666_255_505_244_12,
        1.0 / 66.0,
    ];
    let c = [
        0.0,
        0.161,
        0.327,
        0.9,
        0.980_025_540_904_509_685_729_810_286_287_024_595_494_213_797_956_3,
        1.0,
        1.0,
    ];
    // b_i(θ) = r_i1 θ + r_i2 θ² + r_i3 θ³ + r_i4 θ⁴ (Tsitouras 2011, expanded).
    let weights = vec![
        vec![
            0.999_999_999_999_999_974_283_372_471_559_910_888_475_488_471_328,
            -2.763_706_197_274_825_911_336_735_930_481_400_260_916_070_804_192,
            2.913_255_461_821_912_743_750_680_993_068_08,
            -1.053_088_497_729_021_6,
        ],
        vec![
            0.0,
            0.131_699_999_999_999_997_27,
            -0.223_399_999_999_999_998_18,
            0.1017,
        ],
        vec![
            0.0,
            3.930_296_236_894_751_528_506_874_467_098_133_98,
            -5.941_033_872_131_504_734_702_492_025_894_580_01,
            2.490_627_285_651_252_793,
        ],
        vec![
            0.0,
            -12.411_077_166_933_676_983_734_381_540_685_453_484_102_414_134_010_8,
            30.338_188_630_282_321_598_172_990_369_183_657_6,
            -16.548_102_889_244_902_72,
        ],
        vec![
            0.0,
            37.509_313_416_511_039_194_969_039_653_345_196_312_423_397_921_204_4,
            -88.178_904_894_766_401_101_427_669_354_120_981_7,
            47.379_521_962_819_281_22,
        ],
        vec![
            0.0,
            -27.896_526_289_197_287_805_948_263_144_598_643_896,
            65.091_894_674_793_671_526_290_219_287_165_536_58,
            -34.870_657_861_496_609_74,
        ],
        vec![0.0, 1.5, -4.0, 2.5],
    ];
    ErkTableau {
        name: "tsit5",
        order: 5,
        embedded_order: 4,
        c,
        a,
        b,
        b_hat,
        fsal: true,
        dense: DenseTableau {
            kind: DenseKind::Native,
            order: 4,
            extra_c: vec![],
            extra_a: vec![],
            weights,
        },
        source: "Tsitouras 2011; OrdinaryDiffEq.jl low_order_rk_tableaus.jl",
    }
}

/// Dormand–Prince 5(4) (DOPRI5), FSAL, 7 stages, with Shampine's fourth-order
/// dense output.
///
/// Source: J. R. Dormand, P. J. Prince, "A family of embedded Runge–Kutta
/// formulae", J. Comput. Appl. Math. 6 (1980) 19–26; dense output from
/// L. F. Shampine, "Some practical Runge–Kutta formulas", Math. Comp. 46
/// (1986), as in Hairer–Nørsett–Wanner I §II.6 and Hairer's `dopri5.f`
/// (`contd5`: `y₀ + θ(r₂ + (1−θ)(r₃ + θ(r₄ + (1−θ) r₅)))`), rewritten here as
/// stage weights `w_i = δ_i0 θ + (3b_i − 2δ_i0 − δ_i6 + d_i)θ² + (δ_i0 + δ_i6 −
/// 2b_i − 2d_i)θ³ + d_i θ⁴`.
pub fn dp5() -> ErkTableau<7> {
    let z = 0.0;
    let b = [
        35.0 / 384.0,
        0.0,
        500.0 / 1113.0,
        125.0 / 192.0,
        -2187.0 / 6784.0,
        11.0 / 84.0,
        0.0,
    ];
    let a = [
        [z; 7],
        [1.0 / 5.0, z, z, z, z, z, z],
        [3.0 / 40.0, 9.0 / 40.0, z, z, z, z, z],
        [44.0 / 45.0, -56.0 / 15.0, 32.0 / 9.0, z, z, z, z],
        [
            19372.0 / 6561.0,
            -25360.0 / 2187.0,
            64448.0 / 6561.0,
            -212.0 / 729.0,
            z,
            z,
            z,
        ],
        [
            9017.0 / 3168.0,
            -355.0 / 33.0,
            46732.0 / 5247.0,
            49.0 / 176.0,
            -5103.0 / 18656.0,
            z,
            z,
        ],
        [b[0], b[1], b[2], b[3], b[4], b[5], z],
    ];
    let b_hat = [
        5179.0 / 57600.0,
        0.0,
        7571.0 / 16695.0,
        393.0 / 640.0,
        -92097.0 / 339200.0,
        187.0 / 2100.0,
        1.0 / 40.0,
    ];
    let d = [
        -12715105075.0 / 11282082432.0,
        0.0,
        87487479700.0 / 32700410799.0,
        -10690763975.0 / 1880347072.0,
        701980252875.0 / 199316789632.0,
        -1453857185.0 / 822651844.0,
        69997945.0 / 29380423.0,
    ];
    let weights = (0..7)
        .map(|i| {
            let d0 = if i == 0 { 1.0 } else { 0.0 };
            let d6 = if i == 6 { 1.0 } else { 0.0 };
            vec![
                d0,
                3.0 * b[i] - 2.0 * d0 - d6 + d[i],
                d0 + d6 - 2.0 * b[i] - 2.0 * d[i],
                d[i],
            ]
        })
        .collect();
    ErkTableau {
        name: "dp5",
        order: 5,
        embedded_order: 4,
        c: [0.0, 0.2, 0.3, 0.8, 8.0 / 9.0, 1.0, 1.0],
        a,
        b,
        b_hat,
        fsal: true,
        dense: DenseTableau {
            kind: DenseKind::Native,
            order: 4,
            extra_c: vec![],
            extra_a: vec![],
            weights,
        },
        source: "Dormand & Prince 1980; Shampine 1986 dense output (Hairer dopri5 contd5)",
    }
}

/// Bogacki–Shampine 3(2), FSAL, 4 stages; dense output is the cubic Hermite
/// interpolant (third order, uses the FSAL stage as `f(t₁, y₁)`), as
/// OrdinaryDiffEq.jl does for BS3.
///
/// Source: P. Bogacki, L. F. Shampine, "A 3(2) pair of Runge–Kutta formulas",
/// Appl. Math. Lett. 2 (1989) 321–325; SciML/OrdinaryDiffEq.jl
/// `src/tableaus/low_order_rk_tableaus.jl` (`BS3ConstantCache`).
pub fn bs3() -> ErkTableau<4> {
    let z = 0.0;
    let b = [2.0 / 9.0, 1.0 / 3.0, 4.0 / 9.0, 0.0];
    ErkTableau {
        name: "bs3",
        order: 3,
        embedded_order: 2,
        c: [0.0, 0.5, 0.75, 1.0],
        a: [
            [z; 4],
            [0.5, z, z, z],
            [z, 0.75, z, z],
            [b[0], b[1], b[2], z],
        ],
        b,
        b_hat: [7.0 / 24.0, 1.0 / 4.0, 1.0 / 3.0, 1.0 / 8.0],
        fsal: true,
        dense: DenseTableau::hermite(&b, 3),
        source: "Bogacki & Shampine 1989; OrdinaryDiffEq.jl low_order_rk_tableaus.jl",
    }
}
