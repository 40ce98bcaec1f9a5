// Express 4, installed under the alias `express4` (a devDependency) to test the older peer major. It has no
// types of its own here: the tests type it as Express 5, whose API they use is the same in 4.
declare module 'express4' {
  import express from 'express';
  export default express;
}
