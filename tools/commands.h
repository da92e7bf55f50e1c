#pragma once
/// The subcommands of the `widefuse` executable. Each lives in its own file and registers
/// itself on the CLI11 application; its callback does the work and throws widefuse::Error for
/// anything the user can fix, which widefuse_main.cpp prints as one line.

namespace CLI {
class App;
}

namespace widefuse {

/// `widefuse check FILE`: parses and verifies a fusion text file and prints it back.
void addCheckCommand(CLI::App& app);

/// `widefuse run FILE --input NAME=PATH.npy ... --scalar NAME=VALUE ... --out DIR`: runs a
/// fusion on .npy inputs and writes its outputs and updated inputs as .npy files.
void addRunCommand(CLI::App& app);

/// `widefuse segment FILE [--mode M] [--json]`: prints the segmenter's plan without running.
void addSegmentCommand(CLI::App& app);

/// `widefuse compile FILE`: generates and compiles a fusion's kernels without running them.
void addCompileCommand(CLI::App& app);

/// `widefuse adam`: builds, segments and runs the seed's Adam step (the README's first
/// command).
void addAdamCommand(CLI::App& app);

/// `widefuse models [--json]`: lists the model presets with their tensor counts and sizes.
void addModelsCommand(CLI::App& app);

} // namespace widefuse
