// npu: the command-line entry point of npu-stack.
//
// A command table, as pw_rpc's method tables: each `add*` function below adds one subcommand
// with its options and appends a row (was it given? what runs then?) to the table; main parses
// the command line and runs the row whose command was given.
#include <CLI/CLI.hpp>
#include <cstdio>
#include <functional>
#include <memory>

#include "cli_checks.h"
#include "cmd_bench_onnx.h"
#include "cmd_bench_sim.h"
#include "cmd_conformance.h"
#include "cmd_model.h"
#include "cmd_onnx.h"
#include "cmd_quantize.h"
#include "cmd_run_onnx.h"
#include "cmd_sim.h"
#include "cmd_stress.h"
#include "commands.h"

namespace {

using npu::tools::DeviceChoice;

// Options several commands share: the device and transport, and --json.
struct SharedOptions {
    DeviceChoice choice;
    bool json = false;
};

// One row of the command table: whether its command was given, and what it runs.
struct Command {
    std::function<bool()> given;
    std::function<int()> run;
};
using CommandTable = std::vector<Command>;

void addDeviceOptions(CLI::App* cmd, SharedOptions& shared, bool withDevice) {
    DeviceChoice& choice = shared.choice;
    if (withDevice) {
        cmd->add_option("--device", choice.device, "npu or reference")
            ->check(CLI::IsMember({"npu", "reference"}))
            ->capture_default_str();
    }
    cmd->add_option("--transport", choice.transport,
                    "loopback (in-process firmware), unix (npu-fwd daemon), usb (docs/usb.md) or qemu "
                    "(the firmware image on an emulated Cortex-M55)")
        ->check(CLI::IsMember({"loopback", "unix", "usb", "qemu"}))
        ->capture_default_str();
    cmd->add_option("--usb-device", choice.usbDevice,
                    "usb transport: VID:PID[:SERIAL] in hex (default 1209:0001, any serial)");
    cmd->add_option("--socket", choice.socketPath,
                    "unix transport: the daemon's socket (default: per-user runtime dir)");
    cmd->add_flag("--json", shared.json, "print JSON instead of tables");
    cmd->add_option(
           "--hw-config", choice.hwConfigPath,
           "npu: the simulated NPU's config JSON (docs/hw-config.md; unix: for the daemon it starts)")
        ->check(CLI::ExistingFile);
    cmd->add_flag("--no-autotune{false}", choice.autotune,
                  "npu: compile with the planner's tilings, no autotuning trials (docs/firmware.md)");
    npu::tools::addTimeoutOptions(cmd, choice);
}

// A command implemented by a class with parsed() and run() (SimCli, ConformanceCli, ...).
template <typename Cli>
void addCli(CLI::App& parent, CommandTable& table) {
    auto cli = std::make_shared<Cli>(parent);
    table.push_back({[cli] { return cli->parsed(); }, [cli] { return cli->run(); }});
}

void addInfo(CLI::App& app, SharedOptions& shared, CommandTable& table) {
    auto* info = app.add_subcommand("info", "Versions, capabilities and the hardware configuration");
    addDeviceOptions(info, shared, false);
    table.push_back({[info] { return info->parsed(); },
                     [&shared] { return npu::tools::cmdInfo(shared.choice, shared.json); }});
}

// `npu run`: a test vector (FILE --name NAME), a built-in network (--builtin) or MODEL.onnx.
struct RunCommandOptions {
    std::string file, name;
    npu::tools::BuiltinRunOptions builtin;
    npu::tools::RunOptions vector;
    npu::tools::OnnxRunOptions onnx;
};

void addRunOptions(CLI::App* run, SharedOptions& shared, RunCommandOptions& o) {
    auto* runFile =
        run->add_option("file", o.file, "FILE.jsonl or FILE.jsonl.gz (a test vector), or MODEL.onnx")
            ->check(CLI::ExistingFile);
    run->add_option("--name", o.name, "the vector's name")->needs(runFile);
    run->add_option("--builtin", o.builtin.name, "run a built-in network: mobilenet_v2 or ssd_mobilenet_v1")
        ->excludes(runFile);
    run->add_option("--input-size", o.builtin.inputSize,
                    "--builtin: image height and width (default: the network's)")
        ->check(CLI::Range(32, 512));
    run->add_option("--csv", o.builtin.files.csv, "write the per-operation profile as CSV to FILE");
    run->add_option("--trace", o.builtin.files.trace, "write a Chrome/Perfetto trace of the run to FILE");
    addDeviceOptions(run, shared, true);
    run->add_option("--dot", o.vector.dotFile, "also write the model as a Graphviz graph to FILE");
    run->add_option("--output", o.vector.outputFile,
                    "write the outputs as NumPy arrays: output 0 to FILE.npy, output k to FILE_k.npy");
    run->add_flag("--exact", o.vector.exact,
                  "outputs must equal the expected bytes, no CTS tolerance (a vector saved by the "
                  "differential test holds the reference's outputs)")
        ->needs(runFile);
    run->add_option("--cache-dir", shared.choice.cacheDir,
                    "keep compilations in DIR and reuse them (driver-managed cache)");
    run->add_option("--cache-state-dir", shared.choice.cacheStateDir,
                    "the cache key's secret and token map (default: XDG state dir)");
    run->add_option(
           "--input", o.onnx.inputs,
           "MODEL.onnx: an input tensor (.npy, .pb, .raw float32 or .png image), in input order; repeatable")
        ->check(CLI::ExistingFile);
    run->add_option("--input-shape", o.onnx.inputShapes,
                    "MODEL.onnx: NAME=1x3x48x192 for an input with dynamic dimensions; repeatable");
    run->add_flag("--explain", o.onnx.explain, "MODEL.onnx: print where each operation ran and why");
    run->add_option("--top-k", o.onnx.topK, "MODEL.onnx: classes shown for a [1, C] output")
        ->capture_default_str();
    npu::tools::addImageOptions(*run, o.onnx);
}

int runCommand(const SharedOptions& shared, RunCommandOptions& o) {
    const std::string& file = o.file;
    if (file.size() > 5 && file.substr(file.size() - 5) == ".onnx") {
        o.onnx.files = o.builtin.files;
        o.onnx.dotFile = o.vector.dotFile;
        return npu::tools::cmdRunOnnx(shared.choice, file, o.onnx, shared.json);
    }
    if (!o.builtin.name.empty()) return npu::tools::cmdRunBuiltin(shared.choice, o.builtin, shared.json);
    if (file.empty() || o.name.empty()) {
        std::fprintf(stderr, "npu run: give FILE --name NAME (a test vector) or --builtin NAME\n");
        return 2;
    }
    o.vector.json = shared.json;
    o.vector.csvFile = o.builtin.files.csv;
    o.vector.traceFile = o.builtin.files.trace;
    return npu::tools::cmdRun(shared.choice, file, o.name, o.vector);
}

void addRun(CLI::App& app, SharedOptions& shared, CommandTable& table) {
    auto* run = app.add_subcommand(
        "run", "Run one test vector of a JSON-lines file, or a built-in network, and check its outputs");
    auto options = std::make_shared<RunCommandOptions>();
    addRunOptions(run, shared, *options);
    table.push_back(
        {[run] { return run->parsed(); }, [&shared, options] { return runCommand(shared, *options); }});
}

void addList(CLI::App& app, SharedOptions& shared, CommandTable& table) {
    struct Options {
        std::string file;
        std::vector<std::string> filters;
    };
    auto o = std::make_shared<Options>();
    auto* list = app.add_subcommand("list", "List the vectors of a JSON-lines file: names and operations");
    list->add_option("file", o->file, "FILE.jsonl or FILE.jsonl.gz")->required()->check(CLI::ExistingFile);
    list->add_option("--filter", o->filters, "only names matching GLOB (repeatable)")
        ->allow_extra_args(false);
    list->add_flag("--json", shared.json, "print JSON");
    table.push_back({[list] { return list->parsed(); },
                     [&shared, o] { return npu::tools::cmdList(o->file, o->filters, shared.json); }});
}

void addDemo(CLI::App& app, SharedOptions& shared, CommandTable& table) {
    auto* demo = app.add_subcommand("demo", "The main job: a small quantized CNN through the whole stack");
    addDeviceOptions(demo, shared, false);
    table.push_back({[demo] { return demo->parsed(); },
                     [&shared] { return npu::tools::cmdDemo(shared.choice, shared.json); }});
}

// `npu bench rpc|exec|cache`: the options they share.
struct BenchOptions {
    int iterations = 2000;
    int cacheIterations = 20;
    std::string transport = "local";
    std::string hwConfig;
};

void addBenchRpc(CLI::App& bench, SharedOptions& shared, std::shared_ptr<BenchOptions> options,
                 CommandTable& table) {
    BenchOptions& o = *options;
    auto* rpc = bench.add_subcommand("rpc",
                                     "Round-trip latency: Ping and a one-operation execution over loopback, "
                                     "unix and qemu, and a bare socket");
    rpc->add_flag("--json", shared.json, "print JSON");
    rpc->add_option("--iterations", o.iterations, "round trips per figure")
        ->check(CLI::Range(10, 1000000))
        ->capture_default_str();
    rpc->add_option("--transport", o.transport,
                    "local (loopback and unix, the default) or usb (docs/usb.md: a device and its raw echo)")
        ->check(CLI::IsMember({"local", "usb"}));
    rpc->add_option("--usb-device", shared.choice.usbDevice,
                    "usb: VID:PID[:SERIAL] in hex (default 1209:0001)");
    rpc->add_option("--hw-config", o.hwConfig, "the simulated NPU's config JSON (docs/hw-config.md)")
        ->check(CLI::ExistingFile);
    table.push_back({[rpc] { return rpc->parsed(); },
                     [&shared, options] {
                         const BenchOptions& o = *options;
                         if (o.transport == "usb")
                             return npu::tools::cmdBenchRpcUsb(shared.json, o.iterations,
                                                               shared.choice.usbDevice);
                         return npu::tools::cmdBenchRpc(shared.json, o.iterations, o.hwConfig);
                     }});
}

void addBenchExecAndCache(CLI::App& bench, SharedOptions& shared, std::shared_ptr<BenchOptions> options,
                          CommandTable& table) {
    BenchOptions& o = *options;
    auto* exec = bench.add_subcommand(
        "exec",
        "Per-execution overhead of sync, async, fenced and burst over loopback and unix, and a bare socket");
    exec->add_flag("--json", shared.json, "print JSON");
    exec->add_option("--iterations", o.iterations, "executions per figure")
        ->check(CLI::Range(10, 1000000))
        ->capture_default_str();
    exec->add_option("--hw-config", o.hwConfig, "the simulated NPU's config JSON (docs/hw-config.md)")
        ->check(CLI::ExistingFile);
    table.push_back({[exec] { return exec->parsed(); },
                     [&shared, options] {
                         return npu::tools::cmdBenchExec(shared.json, options->iterations, options->hwConfig);
                     }});

    auto* cache = bench.add_subcommand(
        "cache",
        "Compile vs. prepare-from-cache of the largest model the NPU compiles, and hashing throughput");
    cache->add_flag("--json", shared.json, "print JSON");
    cache->add_option("--iterations", o.cacheIterations, "prepares per figure")
        ->check(CLI::Range(3, 100000))
        ->capture_default_str();
    cache->add_option("--hw-config", o.hwConfig, "the simulated NPU's config JSON (docs/hw-config.md)")
        ->check(CLI::ExistingFile);
    table.push_back({[cache] { return cache->parsed(); },
                     [&shared, options] {
                         return npu::tools::cmdBenchCache(shared.json, options->cacheIterations,
                                                          options->hwConfig);
                     }});
}

void addBench(CLI::App& app, SharedOptions& shared, CommandTable& table) {
    auto* bench = app.add_subcommand("bench", "Benchmarks that print figures");
    bench->require_subcommand(1);
    auto options = std::make_shared<BenchOptions>();
    addBenchRpc(*bench, shared, options, table);
    addBenchExecAndCache(*bench, shared, options, table);
    addCli<npu::tools::BenchSimCli>(*bench, table);
    addCli<npu::tools::BenchModelCli>(*bench, table);
    addCli<npu::tools::BenchOnnxCli>(*bench, table);
}

void addCache(CLI::App& app, SharedOptions& shared, CommandTable& table) {
    struct Options {
        std::string action, dir, stateDir;
    };
    auto o = std::make_shared<Options>();
    auto* cache = app.add_subcommand("cache", "Inspect, verify or clear the compilation cache");
    cache->add_option("action", o->action, "list, verify or clear")
        ->required()
        ->check(CLI::IsMember({"list", "verify", "clear"}));
    cache->add_option(
        "dir", o->dir,
        "a driver-managed cache directory (npu run --cache-dir); without it, the token map only");
    cache->add_option("--state-dir", o->stateDir, "the cache state directory (default: XDG state dir)");
    cache->add_flag("--json", shared.json, "print JSON");
    table.push_back(
        {[cache] { return cache->parsed(); },
         [&shared, o] { return npu::tools::cmdCache(o->action, o->dir, o->stateDir, shared.json); }});
}

// CLI11 reads an unknown word as a stray argument and says only "A subcommand is required":
// name the word and the commands instead. False when argv[1] is an unknown command.
bool knownCommand(CLI::App& app, int argc, char** argv) {
    if (argc <= 1 || argv[1][0] == '-') return true;
    std::string names;
    bool known = false;
    for (const CLI::App* sub : app.get_subcommands([](CLI::App*) { return true; })) {
        known = known || sub->check_name(argv[1]);
        names += (names.empty() ? "" : ", ") + sub->get_name();
    }
    if (!known) {
        std::fprintf(stderr, "npu: unknown command '%s' (commands: %s); see npu --help\n", argv[1],
                     names.c_str());
    }
    return known;
}

}  // namespace

int main(int argc, char** argv) {
    CLI::App app{"npu: run, inspect and benchmark the npu-stack NPU driver"};
    app.require_subcommand(1);
    app.set_help_all_flag("--help-all", "Show help for every command");

    SharedOptions shared;
    CommandTable table;
    addInfo(app, shared, table);
    addRun(app, shared, table);
    addList(app, shared, table);
    addDemo(app, shared, table);
    addBench(app, shared, table);
    addCache(app, shared, table);
    addCli<npu::tools::SimCli>(app, table);
    addCli<npu::tools::ConformanceCli>(app, table);
    addCli<npu::tools::OnnxCli>(app, table);
    addCli<npu::tools::QuantizeCli>(app, table);
    addCli<npu::tools::StressCli>(app, table);

    if (!knownCommand(app, argc, argv)) return 2;
    try {
        app.parse(argc, argv);
    } catch (const CLI::ParseError& e) {
        return app.exit(e) == 0 ? 0 : 2;
    }
    for (const Command& command : table) {
        if (command.given()) return command.run();
    }
    return 2;
}
