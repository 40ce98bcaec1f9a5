import { exampleSmoke } from '@floodgate/testing';
import { start } from '../src/start';

exampleSmoke('express', start);
