//! Named options shared by the benches that take them (`load`, `soak`): `--flag value` or
//! `--flag=value` on the command line, an environment variable as the fallback, `-h`/`--help`,
//! and cargo's own `--bench` ignored. Bad values are errors, not silently replaced defaults.
//! (Its benches allow `clippy::print_stdout`: they report on standard output.)

use std::str::FromStr;

/// The number in the environment variable `name`, else `default`.
pub(crate) fn env_number<T: FromStr>(name: &str, default: T) -> Result<T, String> {
    match std::env::var(name) {
        Ok(text) => text.trim().parse().map_err(|_| format!("{name}={text:?} is not a valid number")),
        Err(_) => Ok(default),
    }
}

/// `text`, the value given to `flag`, as a number.
pub(crate) fn number<T: FromStr>(flag: &str, text: &str) -> Result<T, String> {
    text.trim().parse().map_err(|_| format!("{flag} {text:?} is not a valid number"))
}

/// Walks the command line of bench `bench`. Every option is handed to `apply` with a way to
/// take its value; `apply` answers whether it knows the option. `-h`/`--help` prints `usage`
/// and exits; an unknown option is an error; a bare word (a bench filter) is ignored.
pub(crate) fn parse_flags(
    bench: &str,
    usage: &str,
    mut apply: impl FnMut(&str, &mut dyn FnMut() -> Result<String, String>) -> Result<bool, String>,
) -> Result<(), String> {
    let mut args = std::env::args().skip(1);
    while let Some(arg) = args.next() {
        let (flag, inline) = match arg.split_once('=') {
            Some((flag, value)) if arg.starts_with("--") => (flag.to_owned(), Some(value.to_owned())),
            _ => (arg.clone(), None),
        };
        let mut value = || inline.clone().or_else(|| args.next()).ok_or_else(|| format!("{flag} needs a value"));
        match flag.as_str() {
            // cargo passes `--bench` to every bench target.
            "--bench" => {}
            "-h" | "--help" => {
                println!("{usage}");
                std::process::exit(0);
            }
            other if other.starts_with('-') => {
                if !apply(other, &mut value)? {
                    return Err(format!("unknown option {other}\n{usage}"));
                }
            }
            other => eprintln!("{bench}: ignoring argument {other:?} (a bench filter)"),
        }
    }
    Ok(())
}
