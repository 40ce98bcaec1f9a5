import { exampleSmoke } from '@floodgate/testing';
import { start } from './start';

exampleSmoke('express', start);
