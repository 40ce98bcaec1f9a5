// Koa 2, installed under the alias `koa2` (a devDependency) to test the older peer major. It has no types of
// its own here: the tests type it as Koa 3, whose API they use is the same in 2.
declare module 'koa2' {
  import Koa from 'koa';
  export default Koa;
}
