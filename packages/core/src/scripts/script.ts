/*
 * The script compiler's former path: it lives in ./compiler (compiler/index.ts). The generated scripts'
 * opening comment still names this file (their golden copies pin it), and it keeps older imports working.
 */
export * from './compiler';
