// `sensorcloud completion bash|zsh`: a completion script made from the command tree itself, so it always lists
// the commands and options this version has. Install: `source <(sensorcloud completion bash)` (see docs/cli.md).
import type { Command, Option } from 'commander';
import { action, example, type Context } from '../context.ts';
import { oneOf } from '../arguments.ts';

interface Node {
  /** Space-separated path below the program, '' for the program itself. */
  path: string;
  subcommands: string[];
  options: string[];
}

const flags = (options: readonly Option[]) =>
  options.flatMap((o) => [o.long, o.short].filter((f): f is string => Boolean(f)));

function walk(command: Command, path: string, globals: string[], out: Node[]): void {
  const subcommands = command.commands.filter((c) => !(c as unknown as { _hidden?: boolean })._hidden);
  out.push({
    path,
    subcommands: subcommands.flatMap((c) => [c.name(), ...c.aliases()]),
    options: [...flags(command.options), ...globals, '--help'],
  });
  for (const c of subcommands)
    for (const name of [c.name(), ...c.aliases()]) walk(c, path ? `${path} ${name}` : name, globals, out);
}

function tree(program: Command): Node[] {
  const nodes: Node[] = [];
  walk(program, '', flags(program.options), nodes);
  return nodes;
}

export function bashScript(program: Command): string {
  const cases = tree(program)
    .map((n) => `    "${n.path}") words="${[...n.subcommands, ...n.options].join(' ')}" ;;`)
    .join('\n');
  return `# bash completion for sensorcloud: source <(sensorcloud completion bash)
_sensorcloud() {
  local cur cmdpath="" i w words
  cur="\${COMP_WORDS[COMP_CWORD]}"
  # The command path: the words before the cursor that are not options (nor option values).
  for ((i = 1; i < COMP_CWORD; i++)); do
    w="\${COMP_WORDS[i]}"
    [[ "$w" == -* ]] && continue
    case "\${cmdpath:+$cmdpath }$w" in
${tree(program)
  .filter((n) => n.path !== '')
  .map((n) => `      "${n.path}") cmdpath="${n.path}" ;;`)
  .join('\n')}
    esac
  done
  case "$cmdpath" in
${cases}
    *) words="" ;;
  esac
  COMPREPLY=($(compgen -W "$words" -- "$cur"))
}
complete -o default -F _sensorcloud sensorcloud
`;
}

export function zshScript(program: Command): string {
  const cases = tree(program)
    .map((n) => `    "${n.path}") cands=(${[...n.subcommands, ...n.options].join(' ')}) ;;`)
    .join('\n');
  const paths = tree(program)
    .filter((n) => n.path !== '')
    .map((n) => `      "${n.path}") cmdpath="${n.path}" ;;`)
    .join('\n');
  return `#compdef sensorcloud
# zsh completion for sensorcloud: source <(sensorcloud completion zsh), or save as _sensorcloud in your $fpath
_sensorcloud() {
  # zsh's own $words holds the command line; $path is zsh's PATH array, hence other names here.
  local cmdpath="" w
  local -a cands
  for w in \${words[2,CURRENT-1]}; do
    [[ "$w" == -* ]] && continue
    case "\${cmdpath:+$cmdpath }$w" in
${paths}
    esac
  done
  case "$cmdpath" in
${cases}
    *) cands=() ;;
  esac
  compadd -a cands
}
compdef _sensorcloud sensorcloud
`;
}

export function registerCompletionCommand(program: Command): void {
  example(
    program
      .command('completion <shell>')
      .description('print a shell completion script for bash or zsh')
      .action(
        action(async (ctx: Context, shell: string) => {
          const which = oneOf(shell, ['bash', 'zsh'] as const, 'the shell');
          ctx.out.stdout.write(which === 'bash' ? bashScript(program) : zshScript(program));
        }),
      ),
    'source <(sensorcloud completion bash)',
    // biome-ignore lint/suspicious/noTemplateCurlyInString: zsh's own ${fpath[1]}, printed for the user to run
    'sensorcloud completion zsh > "${fpath[1]}/_sensorcloud"',
  );
}
