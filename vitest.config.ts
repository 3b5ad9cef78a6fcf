import { defineConfig } from 'vitest/config';

export default defineConfig({
  test: {
    include: ['test/**/*.test.ts'],
    testTimeout: 30_000,
    hookTimeout: 60_000,
    pool: 'forks',
    // Two files at a time even on two cores: most of the slow files wait on real clocks (due
    // times, heartbeats, child processes) rather than on the CPU.
    maxWorkers: 2,
  },
});
