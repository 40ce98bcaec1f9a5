/** Response headers as an outcome carries them: name and value, in the order they are written. */
export type HeaderList = [name: string, value: string][];
