/** pino-roll ships no type declarations; this covers the part Ferry uses (in-process build). */
declare module 'pino-roll' {
  import type SonicBoom from 'sonic-boom';

  export interface PinoRollOptions {
    file: string | (() => string);
    size?: string | number;
    frequency?: 'daily' | 'hourly' | number;
    extension?: string;
    symlink?: boolean;
    limit?: { count?: number; removeOtherLogFiles?: boolean };
    dateFormat?: string;
    mkdir?: boolean;
    /** Mode of the files sonic-boom creates. */
    mode?: number;
    sync?: boolean;
    fsync?: boolean;
    minLength?: number;
  }

  export default function build(options: PinoRollOptions): Promise<SonicBoom>;
}
