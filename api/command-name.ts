// How a user runs a shipped part's command, as its help texts, hints and generated files name it: the package's bin
// when the code runs from an installed tarball (it then sits under node_modules), `npx <bin>` when npx started it,
// and the checkout's `./dev …` when it runs from a clone of the repository.

/** Whether this code runs from an installed package (a tarball's install, or the image's) rather than a checkout. */
export const INSTALLED = import.meta.dirname.split(/[\\/]/).includes('node_modules');

/**
 * The command as the user types it: `bin` (or `npx bin`, which npm marks with npm_command=exec) when installed,
 * `checkout` otherwise. `env` is the process's environment.
 */
export function commandName(bin: string, checkout: string, env: Record<string, string | undefined>): string {
  if (!INSTALLED) return checkout;
  return env.npm_command === 'exec' ? `npx ${bin}` : bin;
}
