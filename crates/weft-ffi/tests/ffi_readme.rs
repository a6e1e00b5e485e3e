//! The README's "From C and C++" examples, taken from README.md as they stand, built with
//! sanitizers (the C one against the static library, the C++ one against the shared one)
//! and run, so that the examples stay true.

mod common;

use common::{Lang, Link, Names, build, crate_dir, out_dir, run};

/// The first fenced block of `lang` in the README's "From C and C++" section, with the
/// example's object name replaced by a name of this test run.
fn example(lang: &str, object: &str, names: &Names) -> String {
    let readme = std::fs::read_to_string(crate_dir().join("../../README.md")).expect("README.md");
    let section = readme
        .split("\n## From C and C++\n")
        .nth(1)
        .expect("README.md has a \"From C and C++\" section");
    let fence = format!("\n```{lang}\n");
    let start = section
        .find(&fence)
        .unwrap_or_else(|| panic!("no {lang} example"))
        + fence.len();
    let body = &section[start..];
    let code = &body[..body.find("\n```").expect("the example's closing fence")];
    let quoted = format!("\"{object}\"");
    assert!(code.contains(&quoted), "the {lang} example uses {quoted}");
    code.replace(&quoted, &format!("\"{}-{object}\"", names.0)) + "\n"
}

fn run_example(lang: Lang, fence: &str, ext: &str, object: &str, link: Link) -> String {
    let names = Names::new(&format!("readme-{ext}"));
    let source = out_dir().join(format!("readme-{}.{ext}", names.0));
    std::fs::write(&source, example(fence, object, &names)).expect("write the example");
    let exe = build(
        &format!("readme-{ext}"),
        &[source.to_str().unwrap()],
        lang,
        link,
    );
    let out = run(&exe, &[], &names);
    assert_eq!(
        names.leftovers(),
        Vec::<String>::new(),
        "objects left behind"
    );
    drop(exe);
    let _ = std::fs::remove_file(&source);
    String::from_utf8(out.stdout).expect("UTF-8 output")
}

#[test]
fn readme_c_example() {
    assert_eq!(
        run_example(Lang::C, "c", "c", "market", Link::Static),
        "189.5\n"
    );
}

#[test]
fn readme_cpp_example() {
    assert_eq!(
        run_example(Lang::Cxx, "cpp", "cpp", "frames", Link::Shared),
        "frame\n"
    );
}
