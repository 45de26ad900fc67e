// The shape of every driver's main() (see cli.hpp): parsing, --help, the output checks and the
// row journal before the run (or, with --profile, the profile), and the exit statuses. Apart from
// cli.cpp so that the parser builds (and is fuzzed) without the CUDA runtime.
#include <iostream>

#include "common/cli.hpp"
#include "common/evidence.hpp"
#include "common/output_file.hpp"
#include "common/results.hpp"

namespace common {

int driver_main(int argc, const char* const* argv, const DriverSpec& spec,
                const std::function<int(const CliOptions&)>& run) {
  std::string journal;  // set once the journal is open
  std::vector<std::string> ignores = spec.ignores;
  if (!spec.profile) ignores.push_back("profile");  // a program without a profile case has no --profile
  try {
    const CliOptions o = parse_cli(argc, argv, spec.extras);
    if (o.help) {
      std::cout << usage(spec.name, spec.summary, spec.extras, ignores);
      return 0;
    }
    reject_ignored_flags(o, spec.name, ignores);
    reject_flags_beside_profile(o);
    if (o.evidence_fd >= 0) evidence::open(o.evidence_fd);
    // before the run: a long run's rows must not be lost at its end to an unwritable path
    if (!o.csv.empty() && o.list) check_output_path(o.csv, "csv", {o.input});  // the registry, written whole
    if (!o.csv.empty() && !o.list) {
      check_output_path(o.csv, "csv", {o.input});
      check_output_path(journal_path(o.csv), "csv", {o.input});
      open_row_journal(o.csv);  // every finished row survives a crash (see RowList)
      journal = journal_path(o.csv);
    }
    return o.profile ? spec.profile(o) : run(o);
  } catch (const UsageError& e) {
    close_row_journal(true);  // nothing ran
    std::cerr << spec.name << ": " << e.what() << "\n\n" << usage(spec.name, spec.summary, spec.extras, ignores);
    return 2;
  } catch (const std::exception& e) {
    close_row_journal(false);
    std::cerr << spec.name << ": error: " << e.what() << "\n";
    if (!journal.empty()) std::cerr << spec.name << ": the rows finished before the error are in '" << journal << "'\n";
    return 1;
  }
}

}  // namespace common
