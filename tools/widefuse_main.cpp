/// The `widefuse` executable: one CLI11 application; every subcommand lives in its own file
/// (see tools/commands.h). User errors print one line and exit 1; usage errors exit 2.

#include "tools/commands.h"

#include "ir/error.h"

#include <CLI/CLI.hpp>
#include <fmt/format.h>

#include <cstdio>
#include <exception>
#include <new>

int main(int argc, char** argv) {
  CLI::App app("widefuse: a fusion compiler for pointwise tensor programs", "widefuse");
  app.require_subcommand(1);
  widefuse::addCheckCommand(app);
  widefuse::addRunCommand(app);
  widefuse::addSegmentCommand(app);
  widefuse::addCompileCommand(app);
  widefuse::addAdamCommand(app);
  widefuse::addModelsCommand(app);
  try {
    app.parse(argc, argv);
  } catch (const CLI::ParseError& error) {
    // CLI11 prints help (exit 0) or the usage error; its own exit codes are not meaningful
    // to scripts, so every usage error is 2 as in most Unix tools.
    return app.exit(error) == 0 ? 0 : 2;
  } catch (const widefuse::Error& error) {
    fmt::print(stderr, "widefuse: error: {}\n", error.what());
    return 1;
  } catch (const widefuse::InternalError& error) {
    fmt::print(stderr, "widefuse: {}\n", error.what());
    return 3;
  } catch (const std::bad_alloc&) {
    fmt::print(stderr, "widefuse: error: out of memory\n");
    return 1;
  } catch (const std::exception& error) {
    fmt::print(stderr, "widefuse: error: {}\n", error.what());
    return 1;
  }
  return 0;
}
