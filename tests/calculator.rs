//! `tessel eval` and `tessel show` as a user runs them.

use std::process::Command;

mod common;

/// `tessel eval`'s answer lines for `input` (it must exit 0).
fn eval_lines(input: &str) -> Vec<String> {
    let out = common::eval_stdin(input.as_bytes());
    assert!(out.status.success());
    common::lines(&out)
}

#[test]
fn examples_of_the_issue() {
    let got = eval_lines(
        "composition((6,2):(8,2),(4,3):(3,1))
coalesce((2,(1,6)):(1,(6,2)),(1,1))
complement((2,2):(1,6),24)
zipped_divide((9,(4,8)):(59,(13,1)),<3:3,(2,4):(1,8)>)
blocked_product((2,5):(5,1),(3,4):(1,3))
size((_4,_8):(_8,_1))
cosize((2,2):(1,6))
",
    );
    assert_eq!(
        got,
        [
            "((2,2),3):((24,2),8)",
            "(2,6):(1,2)",
            "(3,2):(2,12)",
            "((3,(2,4)),(3,(2,2))):((177,(13,2)),(59,(26,1)))",
            "((2,3),(5,4)):((5,10),(1,30))",
            "32",
            "8",
        ]
    );
}

#[test]
fn errors_are_printed_and_evaluation_goes_on() {
    let got = eval_lines("composition((6,2):(8,2),(4,3):(5,1))\nnope(1)\n(2,3):(1)\n24:2\n");
    assert_eq!(got.len(), 4);
    assert!(
        got[0].starts_with("error: stride divisibility"),
        "{}",
        got[0]
    );
    assert_eq!(got[1], "error: unknown operation 'nope'");
    assert!(
        got[2].starts_with("error: tuples are not congruent"),
        "{}",
        got[2]
    );
    assert_eq!(got[3], "24:2");
}

#[test]
fn one_expression_as_argument_and_show() {
    let out = Command::new(env!("CARGO_BIN_EXE_tessel"))
        .args(["eval", "logical_product((2,2):(4,1),6:1)"])
        .output()
        .unwrap();
    assert_eq!(
        String::from_utf8(out.stdout).unwrap(),
        "((2,2),(2,3)):((4,1),(2,8))\n"
    );
    let out = Command::new(env!("CARGO_BIN_EXE_tessel"))
        .args(["show", "(2,3):(3,1)"])
        .output()
        .unwrap();
    let text = String::from_utf8(out.stdout).unwrap();
    let rows: Vec<&str> = text.lines().collect();
    assert_eq!(rows[0], "(2,3):(3,1)");
    assert!(rows[3].contains("| 0 | 1 | 2 |"), "{text}");
    assert!(rows[5].contains("| 3 | 4 | 5 |"), "{text}");
}

/// Issue 4's tensor examples, exactly, through `tessel eval`.
#[test]
fn tensor_examples() {
    let cases = [
        ("local_tile((4,6):(6,1),(2,2),(1,1))", "14 o (2,2):(6,1)"),
        ("local_tile((4,6,8):(48,8,1),(2,2),(1,2))", "128 o (2,2,8):(48,8,1)"),
        ("local_tile((4,6):(6,1),(2,2),(0,_))", "0 o (2,2,3):(6,1,2)"),
        ("local_tile((4,8):(8,1),(2,2,4),(0,0,_),(1,X,1))", "0 o (2,4,2):(8,1,4)"),
        ("local_partition((8,6):(1,8),(4,2):(1,4),1)", "1 o (2,3):(4,16)"),
        ("local_partition((8,6):(1,8),(4,2):(1,4),1,(1,X))", "1 o (2,6):(4,8)"),
        ("make_identity_tensor((14,1024))", "(0,0) o (14,1024):(1@0,1@1)"),
        (
            "local_tile(make_identity_tensor((14,1024)),(4,1024),(3,0))",
            "(12,0) o (4,1024):(1@0,1@1)",
        ),
        (
            "partition_S(tiled_copy_tv(make_ordered_layout((4,32),(1,0)),(1,8),128,64),0,local_tile(make_identity_tensor((14,1024)),(4,1024),(3,0)))",
            "(12,0) o ((2,4),1,4):((1@1,2@1),0,256@1)",
        ),
        (
            "partition_S(tiled_copy_tv(make_ordered_layout((4,32),(1,0)),(1,8),128,64),1,local_tile(make_identity_tensor((14,1024)),(4,1024),(3,0)))",
            "(12,8) o ((2,4),1,4):((1@1,2@1),0,256@1)",
        ),
        (
            "partition_D(tiled_copy_tv(make_ordered_layout((4,32),(1,0)),(1,8),128,64),32,local_tile(make_identity_tensor((14,1024)),(4,1024),(3,0)))",
            "(13,0) o ((2,4),1,4):((1@1,2@1),0,256@1)",
        ),
        (
            "partition_S(tiled_copy_tv(make_ordered_layout((4,32),(1,0)),(1,8),128,64),0,local_tile((14,1024):(1024,1),(4,1024),(0,0)))",
            "0 o ((2,4),1,4):((1,2),0,256)",
        ),
        ("local_tile((4,6):(6,1),(2,2),(0,0,0))", "error: "),
        ("tiled_copy_tv(4:1,3:1,128,32)", "error: "),
    ];
    let input: String = cases.iter().map(|(e, _)| format!("{e}\n")).collect();
    let got = eval_lines(&input);
    for ((expr, want), got) in cases.iter().zip(&got) {
        assert!(
            if want.ends_with(": ") {
                got.starts_with(want)
            } else {
                got == want
            },
            "{expr}\n  got  {got}\n  want {want}"
        );
    }
}

/// Each report of the hardening issue, as a user typed it: the answer now, or the error that
/// names the condition that failed.
#[test]
fn hardening_reports() {
    let cases = [
        // a deep identity tensor printed its strides (it panicked, ending the stream)
        (
            "make_identity_tensor((((((((((2,3))))))))))",
            "(((((((((0,0))))))))) o (((((((((2,3))))))))):(((((((((1@0@0@0@0@0@0@0@0@0,1@1@0@0@0@0@0@0@0@0)))))))))",
        ),
        // idx2crd of a coordinate tuple: the natural coordinate (CuTe's documentation)
        ("idx2crd((3,(2,3)),(1,5))", "(1,(1,2))"),
        ("idx2crd((3,(2,3)),(1,(1,2)))", "(1,(1,2))"),
        ("idx2crd((3,(2,3)),16)", "(1,(1,2))"),
        (
            "idx2crd((3,(2,3)),(3,0))",
            "error: coordinate 3 outside its mode of size 3 (need 0 <= 3 < 3)",
        ),
        ("crd2idx((3,(2,3)):(1,(3,6)),(1,5))", "16"),
        ("crd2idx((3,(2,3)):(1,(3,6)),(1,(1,2)))", "16"),
        (
            "local_partition((8,8),(2,2),(1,1))",
            "error: expected an integer, found (1,1)",
        ),
        (
            "local_partition((8,8),(2,2),4)",
            "error: coordinate 4 outside its mode of size 4 (need 0 <= 4 < 4)",
        ),
        (
            "slice((4,6):(6,1),(4,_))",
            "error: coordinate 4 outside its mode of size 4 (need 0 <= 4 < 4)",
        ),
        // make_layout of one layout wraps it: nesting is part of the meaning
        ("make_layout(3:1)", "(3):(1)"),
        ("make_layout(3:1,make_layout(3:1),3:1)", "(3,(3),3):(1,(1),1)"),
        ("make_layout((2,3))", "(2,3):(1,2)"),
        // the dice of a swizzled layout (it returned the slice)
        ("dice(Sw<3,4,3> o (8,64):(64,1),(1,_))", "Sw<3,4,3> o 0 o (8):(64)"),
        ("slice(Sw<3,4,3> o (8,64):(64,1),(1,_))", "Sw<3,4,3> o 64 o (64):(1)"),
        // the condition that failed, not a consequence of it
        (
            "tiled_copy_tv((4,32):(32,1),(1,8),96,32)",
            "error: unsupported copy atom of 96 bits (copy atoms move 32, 64 or 128 bits)",
        ),
        (
            "size<-1>((2,3))",
            "error: size<-1> at byte 5: a mode index is 0 or more",
        ),
        // coalesce's product of shape and stride past i64 (it overflowed)
        (
            "coalesce((2,2):(4611686018427387904,1))",
            "(2,2):(4611686018427387904,1)",
        ),
        (
            "Sw<3,9223372036854775807,3> o (8,64):(64,1)",
            "error: swizzle needs B >= 0, M >= 0 and |S| >= B",
        ),
    ];
    let input: String = cases.iter().map(|(e, _)| format!("{e}\n")).collect();
    let got = eval_lines(&input);
    assert_eq!(got.len(), cases.len());
    for ((expr, want), got) in cases.iter().zip(&got) {
        assert_eq!(got, want, "{expr}");
    }
    // `tessel show` draws a swizzled layout
    let out = Command::new(env!("CARGO_BIN_EXE_tessel"))
        .args(["show", "Sw<1,0,1> o (2,2):(2,1)"])
        .output()
        .unwrap();
    assert!(out.status.success());
    let text = String::from_utf8(out.stdout).unwrap();
    // Sw<1,0,1> xors bit 1 into bit 0: row 0 holds 0, 1; row 1 (2, 3 before) holds 3, 2
    assert!(
        text.contains(" 0  | 0 | 1 |") && text.contains(" 1  | 3 | 2 |"),
        "{text}"
    );
}

#[test]
fn mma_atoms_and_tiled_mmas() {
    let got = eval_lines(
        "layout_a_tv(SM80_16x8x16_F32F16F16F32_TN)
layout_b_tv(mma_atom(SM80_16x8x16_F32BF16BF16F32_TN))
layout_c_tv(SM80_16x8x16_F16F16F16F16_TN)
layout_a_tv(SM80_16x8x8_F32BF16BF16F32_TN)
layout_b_tv(SM80_16x8x8_F16F16F16F16_TN)
layout_c_tv(make_tiled_mma(SM80_16x8x16_F32F16F16F32_TN,(2,2)))
layout_a_tv(make_tiled_mma(SM80_16x8x16_F32F16F16F32_TN,(2,2)))
layout_b_tv(make_tiled_mma(SM80_16x8x16_F32F16F16F32_TN,(2,2)))
layout_c_tv(make_tiled_mma(SM80_16x8x16_F32F16F16F32_TN,(2,2):(2,1)))
partition_C(make_tiled_mma(SM80_16x8x16_F32F16F16F32_TN,(2,2)),5,(64,32))
mma_atom(SM80_16x8x8_F32F16F16F32_TN)
make_tiled_mma(SM80_16x8x16_F32F16F16F32_TN,(2,2):(1,1))
SM80_16x8x16_F32F16F16F32
mma_atom((2,2))
partition_A(make_tiled_mma(SM80_16x8x16_F32F16F16F32_TN),32,(16,16))
partition_C(make_tiled_mma(SM80_16x8x16_F32F16F16F32_TN,(2,2)),0,(48,16))
",
    );
    assert_eq!(
        got[..11],
        [
            "((4,8),(2,2,2)):((32,1),(16,8,128))",
            "((4,8),(2,2)):((16,1),(8,64))",
            "((4,8),(2,2)):((32,1),(16,8))",
            "((4,8),(2,2)):((32,1),(16,8))",
            "((4,8),2):((16,1),8)",
            "((4,8,2,2),((2,2),(1,1))):((64,1,16,256),((32,8),(0,0)))",
            "((4,8,2,2),((2,2,2),(1,1))):((64,1,16,0),((32,8,256),(0,0)))",
            "((4,8,2,2),((2,2),(1,1))):((32,1,0,8),((16,128),(0,0)))",
            "(((4,8),2,2),((2,2),(1,1))):(((64,1),256,16),((32,8),(0,0)))",
            "129 o ((2,2),2,2):((64,8),32,1024)",
            "MMA_Atom(SM80_16x8x8_F32F16F16F32_TN, shape_mnk (16,8,8), ThrID 32:1, \
             LayoutA_TV ((4,8),(2,2)):((32,1),(16,8)), LayoutB_TV ((4,8),2):((16,1),8), \
             LayoutC_TV ((4,8),(2,2)):((32,1),(16,8)))",
        ]
    );
    for (line, want) in got[11..].iter().zip([
        "error: a thread-value layout must be a bijection",
        "error: unknown name \"SM80_16x8x16_F32F16F16F32\"",
        "error: expected an MMA atom, found (2,2)",
        "error: coordinate 32 outside its mode of size 32",
        "error: 32 does not divide 48",
    ]) {
        assert!(line.starts_with(want), "{line}");
    }
    assert_eq!(got.len(), 16);
}

/// A command refused as bad input: exit status 2, nothing on stdout, `want` in its one error line.
fn refused(out: &std::process::Output, args: &[&str], want: &str) {
    let err = String::from_utf8_lossy(&out.stderr);
    assert_eq!(out.status.code(), Some(2), "{args:?}: {err}");
    assert!(
        out.stdout.is_empty() && err.contains(want),
        "{args:?}: {err}"
    );
}

/// `tessel svg` as a user runs it: the document on stdout, or one error line on stderr and exit
/// status 2 with nothing on stdout.
#[test]
fn svg_on_stdout_errors_on_stderr() {
    let run = |args: &[&str]| {
        Command::new(env!("CARGO_BIN_EXE_tessel"))
            .arg("svg")
            .args(args)
            .output()
            .unwrap()
    };
    let out = run(&["(2,2):(1,2)"]);
    assert!(out.status.success());
    let s = String::from_utf8(out.stdout).unwrap();
    assert!(s.starts_with("<svg ") && s.ends_with("</svg>\n"), "{s}");
    let out = run(&[
        "--tile",
        "(8,8)",
        "layout_c_tv(SM80_16x8x16_F32F16F16F32_TN)",
    ]);
    assert_eq!(out.status.code(), Some(2));
    for (args, want) in [
        (&["composition("][..], "error: "),
        (
            &["--tile", "(2,2)", "(4,2):(1,4)"][..],
            "outside the 2x2 tile",
        ),
        (&["--tile", "(2,x)", "(4,2):(1,4)"][..], "--tile (2,x): "),
        (
            &["--bits", "0", "Sw<3,3,3> o (8,64):(64,1)"][..],
            "element bits",
        ),
    ] {
        refused(&run(args), args, want);
    }
}

/// `tessel analyze` as a user runs it: the verdict first, then the table; bad input is one
/// error line on stderr and exit status 2.
#[test]
fn analyze_verdict_table_and_errors() {
    let run = |args: &[&str]| {
        Command::new(env!("CARGO_BIN_EXE_tessel"))
            .arg("analyze")
            .args(args)
            .output()
            .unwrap()
    };
    let tv = "((32,8),(2,8)):((64,1),(2048,8))";
    let out = run(&["smem", "(64,64):(1,64)", "--tv", tv]);
    assert!(out.status.success());
    let s = String::from_utf8(out.stdout).unwrap();
    assert!(
        s.starts_with("32-way bank conflicts: 128 of 128 phases"),
        "{s}"
    );
    assert!(s.contains("bank 0: threads 0-31"), "{s}");
    let out = run(&["gmem", "(64,64):(8192,1)", "--tv", tv]);
    let s = String::from_utf8(out.stdout).unwrap();
    assert!(s.starts_with("coalesced: 100.0%"), "{s}");
    for (args, want) in [
        (
            &["smem", "16:1", "--tv", tv][..],
            "outside the memory layout's domain",
        ),
        (
            &["smem", "(64,64):(1,64)", "--tv", "composition("][..],
            "--tv: ",
        ),
        (
            &["smem", "(64,64):(1,64)", "--tv", tv, "--width", "64"][..],
            "thread 0, value 1",
        ),
        (
            &["gmem", "(64,64):(1,64)", "--tv", tv, "--bits", "24"][..],
            "power of two",
        ),
    ] {
        refused(&run(args), args, want);
    }
    let out = run(&["lmem", "16:1", "--tv", tv]);
    assert_eq!(out.status.code(), Some(2));
}
