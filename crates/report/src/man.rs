//! The manual page (roff) of a command tree, as `iotoll man` prints it:
//! one page holding every subcommand, each a section with its synopsis and
//! options.

use std::io::Write;

/// Writes the page of `cmd`: its title, name, synopsis, description and
/// options, then every subcommand (and theirs) as a section of its own,
/// then the version.
pub fn page(cmd: &clap::Command, out: &mut impl Write) -> std::io::Result<()> {
    let man = clap_mangen::Man::new(cmd.clone());
    man.render_title(&mut *out)?;
    man.render_name_section(&mut *out)?;
    man.render_synopsis_section(&mut *out)?;
    man.render_description_section(&mut *out)?;
    man.render_options_section(&mut *out)?;
    // No SUBCOMMANDS section: clap_mangen's names a page per subcommand
    // (iotoll-disk(1), ...), and this one page holds them all below.
    subcommands(out, cmd, cmd.get_name())?;
    man.render_version_section(&mut *out)
}

/// Each subcommand of `cmd` and its own subcommands, with their options.
fn subcommands(out: &mut impl Write, cmd: &clap::Command, path: &str) -> std::io::Result<()> {
    for c in cmd.get_subcommands().filter(|c| c.get_name() != "help") {
        let name = format!("{path} {}", c.get_name());
        writeln!(out, ".SH \"{}\"", name.to_uppercase())?;
        if let Some(a) = c.get_about() {
            // Escaped as clap_mangen escapes the rest of the page.
            let about = roff::Roff::new()
                .text([roff::roman(a.to_string())])
                .to_roff();
            write!(out, "{about}")?;
        }
        let page = clap_mangen::Man::new(c.clone().bin_name(name.clone()));
        page.render_synopsis_section(&mut *out)?;
        page.render_options_section(&mut *out)?;
        subcommands(out, c, &name)?;
    }
    Ok(())
}
