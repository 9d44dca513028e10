fn main() {
    std::process::exit(brunt::cli::main());
}
